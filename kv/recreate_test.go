package kv_test

import (
	"context"
	"testing"

	"github.com/nats-io/nats.go/jetstream"

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
	nc := connect(t, srv.URL())
	b, err := kv.Open("cfg", kv.Config{}, connection.NewFixed(nc), kv.JSON[int]{})
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
	wctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for wctx.Err() == nil { // as a supervisor restarts it
			_ = w.Serve(wctx)
		}
	}()
	rec.waitFor(t, "synced", func(_ []kv.Entry[int], s int) bool { return s == 1 })
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	if err := js.DeleteKeyValue(ctx, "cfg"); err != nil {
		t.Fatal(err)
	}
	other, err := kv.Open("cfg", kv.Config{}, connection.NewFixed(connect(t, srv.URL())), kv.JSON[int]{})
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
	cancel()
	<-done
}

// A watch whose bucket was deleted declares it again when it restarts.
func TestWatchDeclaresDeletedBucketAgain(t *testing.T) {
	t.Parallel()
	srv := natstest.RunServer(t)
	ctx := ctxT(t)
	nc := connect(t, srv.URL())
	b, err := kv.Open("cfg", kv.Config{}, connection.NewFixed(nc), kv.JSON[int]{})
	if err != nil {
		t.Fatal(err)
	}
	rec := newRecord()
	w, err := b.Watch("w", kv.WatchConfig{}, rec.fn)
	if err != nil {
		t.Fatal(err)
	}
	wctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for wctx.Err() == nil { // as a supervisor restarts it
			_ = w.Serve(wctx)
		}
	}()
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
	cancel()
	<-done
}
