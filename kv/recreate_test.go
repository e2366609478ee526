package kv_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/corral-go/corral/codec"
	"github.com/corral-go/corral/connection"
	"github.com/corral-go/corral/internal/natstest"
	"github.com/corral-go/corral/kv"
)

// The bucket is deleted and declared again (an operator's kv rm, or a
// memory bucket after a server restart): the watch must deliver the new
// bucket's changes, not skip them up to its position in the old one.
func TestWatchFollowsRecreatedBucket(t *testing.T) {
	t.Parallel()
	srv := natstest.RunServer(t)
	ctx := ctxT(t)
	nc := natstest.Connect(t, srv.URL())
	b, err := kv.Open("cfg", kv.Config{}, connection.NewFixed(nc), codec.JSON[int]{})
	if err != nil {
		t.Fatal(err)
	}
	for i := 1; i <= 5; i++ {
		if _, err := b.Put(ctx, "k", i); err != nil {
			t.Fatal(err)
		}
	}
	rec := newRecord()
	w, err := b.Watch("w", kv.WatchConfig{}, rec.fn)
	if err != nil {
		t.Fatal(err)
	}
	natstest.Restart(t, w)
	rec.waitFor(t, "synced", func(_ []kv.Entry[int], s int) bool { return s == 1 })
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	if err := js.DeleteKeyValue(ctx, "cfg"); err != nil {
		t.Fatal(err)
	}
	other, err := kv.Open("cfg", kv.Config{}, connection.NewFixed(natstest.Connect(t, srv.URL())), codec.JSON[int]{})
	if err != nil {
		t.Fatal(err)
	}
	for i := 1; i <= 3; i++ {
		if _, err := other.Put(ctx, "k", 100+i); err != nil {
			t.Fatal(err)
		}
	}
	// The bucket keeps one revision per key: the watch may see only the
	// last of these, but must see it.
	rec.waitFor(t, "the new bucket's last value", func(got []kv.Entry[int], _ int) bool {
		return len(got) > 0 && got[len(got)-1].Value == 103
	})
}

// A watch whose bucket was deleted declares it again when it restarts.
func TestWatchDeclaresDeletedBucketAgain(t *testing.T) {
	t.Parallel()
	srv := natstest.RunServer(t)
	ctx := ctxT(t)
	nc := natstest.Connect(t, srv.URL())
	b, err := kv.Open("cfg", kv.Config{}, connection.NewFixed(nc), codec.JSON[int]{})
	if err != nil {
		t.Fatal(err)
	}
	rec := newRecord()
	w, err := b.Watch("w", kv.WatchConfig{}, rec.fn)
	if err != nil {
		t.Fatal(err)
	}
	natstest.Restart(t, w)
	rec.waitFor(t, "synced", func(_ []kv.Entry[int], s int) bool { return s == 1 })
	created := natstest.Signal(t, nc, "$JS.EVENT.ADVISORY.STREAM.CREATED.KV_cfg")
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	if err := js.DeleteKeyValue(ctx, "cfg"); err != nil {
		t.Fatal(err)
	}
	select {
	case <-created:
	case <-ctx.Done():
		t.Fatal("the watch never declared its deleted bucket again")
	}
}

// nats.go replaces the watch's ordered consumer (here its consumer is
// deleted; a server restart or missed heartbeats do the same) while the
// watch delivers the current values: it still delivers each key's current
// value once, never an older revision.
func TestWatchConsumerReplacedDuringCurrentValues(t *testing.T) {
	t.Parallel()
	srv := natstest.RunServer(t)
	ctx := ctxT(t)
	nc := natstest.Connect(t, srv.URL())
	b, err := kv.Open("cfg", kv.Config{History: 5}, connection.NewFixed(nc), codec.JSON[int]{})
	if err != nil {
		t.Fatal(err)
	}
	// More keys than the ordered consumer fetches at once, so that most
	// come after the replacement.
	const keys = 1500
	for i := range keys {
		for v := 1; v <= 2; v++ {
			if _, err := b.Put(ctx, fmt.Sprintf("k%d", i), v); err != nil {
				t.Fatal(err)
			}
		}
	}
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	first := true
	rec := newRecord()
	w, err := b.Watch("w", kv.WatchConfig{}, func(ctx context.Context, e kv.Entry[int]) error {
		if first {
			first = false
			s, err := js.Stream(ctx, "KV_cfg")
			if err != nil {
				return err
			}
			for c := range s.ListConsumers(ctx).Info() {
				if err := s.DeleteConsumer(ctx, c.Name); err != nil {
					return err
				}
			}
		}
		return rec.fn(ctx, e)
	})
	if err != nil {
		t.Fatal(err)
	}
	wctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- w.Serve(wctx) }()
	rec.waitFor(t, "synced", func(_ []kv.Entry[int], s int) bool { return s == 1 })
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("Serve: %v, want it to follow the replaced consumer until cancelled", err)
	}
	got, _ := rec.snapshot()
	old := 0
	for _, e := range got {
		if e.Value == 1 {
			old++
		}
	}
	if len(got) != keys || old != 0 {
		t.Fatalf("delivered %d entries before Synced, %d of them superseded revisions; want the %d current values",
			len(got), old, keys)
	}
}

// A memory bucket is lost in a server restart and declared again by
// another client, which writes to it before the watch comes back: the
// watch delivers the new bucket's revisions from 1, not from its position
// in the lost one, whether or not it had delivered anything since it
// started.
func TestWatchMemoryBucketLostInRestart(t *testing.T) {
	t.Parallel()
	for _, updatesOnly := range []bool{false, true} {
		t.Run(fmt.Sprintf("updates_only=%v", updatesOnly), func(t *testing.T) {
			t.Parallel()
			watchMemoryBucketLostInRestart(t, updatesOnly)
		})
	}
}

func watchMemoryBucketLostInRestart(t *testing.T, updatesOnly bool) {
	srv := natstest.RunServer(t)
	ctx := ctxT(t)
	nc, err := nats.Connect(srv.URL(), nats.MaxReconnects(-1), nats.ReconnectWait(50*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	cfg := kv.Config{Storage: "memory"}
	b, err := kv.Open("mem", cfg, connection.NewFixed(nc), codec.JSON[int]{})
	if err != nil {
		t.Fatal(err)
	}
	for i := 1; i <= 5; i++ {
		if _, err := b.Put(ctx, fmt.Sprintf("old%d", i), i); err != nil {
			t.Fatal(err)
		}
	}
	rec := newRecord()
	w, err := b.Watch("w", kv.WatchConfig{UpdatesOnly: updatesOnly}, rec.fn)
	if err != nil {
		t.Fatal(err)
	}
	natstest.Restart(t, w)
	old := 5 // delivered before the restart
	if updatesOnly {
		old = 0
	}
	rec.waitFor(t, "synced", func(e []kv.Entry[int], s int) bool { return s == 1 && len(e) == old })
	srv.Restart()
	other, err := kv.Open("mem", cfg, connection.NewFixed(natstest.Connect(t, srv.URL())), codec.JSON[int]{})
	if err != nil {
		t.Fatal(err)
	}
	for i := 1; i <= 8; i++ {
		if _, err := other.Put(ctx, fmt.Sprintf("new%d", i), i); err != nil {
			t.Fatal(err)
		}
	}
	rec.waitFor(t, "the new bucket's 8 revisions", func(e []kv.Entry[int], _ int) bool { return len(e) >= old+8 })
	got, _ := rec.snapshot()
	for i, e := range got[old:] {
		if want := fmt.Sprintf("new%d", i+1); len(got) != old+8 || e.Key != want || e.Revision != uint64(i+1) {
			t.Fatalf("after the restart the watch delivered %+v, want new1..new8 at revisions 1..8", got[old:])
		}
	}
}
