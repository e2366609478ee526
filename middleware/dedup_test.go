package middleware_test

import (
	"context"
	"errors"
	"maps"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/corral-go/corral/consumer"
	"github.com/corral-go/corral/kv"
	"github.com/corral-go/corral/middleware"
	"github.com/corral-go/corral/supervisor"
)

// A message whose key is recorded is acked without running the handler;
// the key is its Nats-Msg-Id when it has one, else its stream and
// sequence, under its handler's name; a message handled is recorded.
func TestDedupSkipsRecordedKeys(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.stream("DD", "dd.>")
	bucket := e.bucket("dedup", kv.Config{})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	for _, k := range []string{"h.id.order-1", "h.seq.DD.3"} {
		if _, err := bucket.Put(ctx, k, nil); err != nil {
			t.Fatal(err)
		}
	}
	var skipped skips
	dedup := middleware.Dedup(bucket, middleware.DedupConfig{OnDuplicate: skipped.add})
	got := newRuns()
	h := consumer.HandlerFunc(func(ctx context.Context, m *consumer.Msg) error {
		got.add(m)
		return nil
	})
	cfg := consumer.Config{Middleware: []consumer.Middleware{dedup}, JetStream: consumer.JetStream{Stream: "DD"}}
	if err := e.group.Handle("h", cfg, h); err != nil {
		t.Fatal(err)
	}
	e.publish("dd.x", "a", "order-1", true) // recorded by Msg-Id
	e.publish("dd.x", "b", "order-2", true)
	e.publish("dd.x", "c", "", true) // recorded by sequence
	e.publish("dd.x", "d", "", true)
	stop := e.serve(1)
	eventually(t, "all acked", func() bool { return e.counters("h").Acked == 4 })
	stop()
	if want := map[string]int{"b": 1, "d": 1}; !maps.Equal(got.get(), want) {
		t.Fatalf("handled %v, want %v", got.get(), want)
	}
	if want := []string{"a h.id.order-1", "c h.seq.DD.3"}; !slices.Equal(skipped.get(), want) {
		t.Fatalf("skipped %q, want %q", skipped.get(), want)
	}
	keys, err := bucket.Keys(ctx)
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(keys)
	if want := []string{"h.id.order-1", "h.id.order-2", "h.seq.DD.3", "h.seq.DD.4"}; !slices.Equal(keys, want) {
		t.Fatalf("keys %q, want %q", keys, want)
	}
}

// A key is recorded only once the handler has succeeded: a failure is
// retried and runs the handler again, while a message handled and
// recorded but not acked (a crash before the ack, played here by an
// outer middleware failing the first delivery) is acked when it comes
// again, without running the handler.
func TestDedupRecordsSuccessOnly(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.stream("RETRY", "retry")
	dedup := middleware.Dedup(e.bucket("retried", kv.Config{}), middleware.DedupConfig{})
	e.group.Use(func(next consumer.Handler) consumer.Handler {
		return consumer.HandlerFunc(func(ctx context.Context, m *consumer.Msg) error {
			err := next.Handle(ctx, m)
			if m.Metadata().NumDelivered == 1 {
				return errors.New("lost before the ack")
			}
			return err
		})
	})
	got := newRuns()
	h := consumer.HandlerFunc(func(ctx context.Context, m *consumer.Msg) error {
		if got.add(m) == 1 && string(m.Data()) == "fails once" {
			return errors.New("not yet")
		}
		return nil
	})
	cfg := consumer.Config{Middleware: []consumer.Middleware{dedup},
		JetStream: consumer.JetStream{Stream: "RETRY", MaxDeliver: 5, Backoff: []time.Duration{time.Millisecond}}}
	if err := e.group.Handle("h", cfg, h); err != nil {
		t.Fatal(err)
	}
	e.publish("retry", "fails once", "", true)
	e.publish("retry", "succeeds", "", true)
	stop := e.serve(1)
	eventually(t, "both acked", func() bool { return e.counters("h").Acked == 2 })
	stop()
	if want := map[string]int{"fails once": 2, "succeeds": 1}; !maps.Equal(got.get(), want) {
		t.Fatalf("handled %v, want %v", got.get(), want)
	}
	if c := e.counters("h"); c.Naked != 2 || c.Terminated != 0 {
		t.Fatalf("counters: %+v, want each naked once", c)
	}
}

// Each handler records its own messages: a second handler of the stream,
// sharing the bucket, handles every message the first has handled and
// recorded.
func TestDedupPerHandler(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.stream("SHARED", "shared")
	dedup := middleware.Dedup(e.bucket("shared", kv.Config{}), middleware.DedupConfig{})
	second := consumer.NewGroup(e.src, supervisor.Events{Hook: e.rec.Hook})
	want := map[string]int{"x": 1, "y": 1}
	for i, g := range []*consumer.Group{e.group, second} {
		name := []string{"one", "two"}[i]
		got := newRuns()
		g.Use(dedup)
		h := consumer.HandlerFunc(func(ctx context.Context, m *consumer.Msg) error {
			got.add(m)
			return nil
		})
		if err := g.Handle(name, consumer.Config{JetStream: consumer.JetStream{Stream: "SHARED"}}, h); err != nil {
			t.Fatal(err)
		}
		if i == 0 {
			e.publish("shared", "x", "id-x", true)
			e.publish("shared", "y", "", true)
		}
		stop := e.serveGroup(g, 1)
		eventually(t, name+" acked", func() bool {
			for _, s := range g.Status() {
				return s.Counters.Acked == 2
			}
			return false
		})
		stop()
		if !maps.Equal(got.get(), want) {
			t.Fatalf("%s handled %v, want %v", name, got.get(), want)
		}
	}
}

// A core message is deduplicated by its Nats-Msg-Id; without one it is
// handled every time.
func TestDedupCore(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	dedup := middleware.Dedup(e.bucket("core", kv.Config{TTL: time.Hour}), middleware.DedupConfig{})
	got := newRuns()
	h := consumer.HandlerFunc(func(ctx context.Context, m *consumer.Msg) error {
		got.add(m)
		return nil
	})
	if err := e.group.Handle("c", consumer.Config{Subject: "core", Middleware: []consumer.Middleware{dedup}}, h); err != nil {
		t.Fatal(err)
	}
	stop := e.serve(1)
	for range 2 {
		e.publish("core", "with id", "same", false)
		e.publish("core", "without", "", false)
	}
	eventually(t, "all processed", func() bool { return e.counters("c").Processed == 4 })
	stop()
	if want := map[string]int{"with id": 1, "without": 2}; !maps.Equal(got.get(), want) {
		t.Fatalf("handled %v, want %v", got.get(), want)
	}
}

// A lookup that fails (the bucket is bound and missing), or a nil
// bucket, fails the message without running the handler.
func TestDedupFailsWhenItCannotCheck(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	missing := middleware.Dedup(e.bucket("missing", kv.Config{Bind: true}), middleware.DedupConfig{})
	none := middleware.Dedup[[]byte](nil, middleware.DedupConfig{})
	var calls atomic.Int64
	h := consumer.HandlerFunc(func(ctx context.Context, m *consumer.Msg) error {
		calls.Add(1)
		return nil
	})
	for name, mw := range map[string]consumer.Middleware{"missing": missing, "none": none} {
		if err := e.group.Handle(name, consumer.Config{Subject: name, Middleware: []consumer.Middleware{mw}}, h); err != nil {
			t.Fatal(err)
		}
	}
	stop := e.serve(2)
	e.publish("missing", "m", "id-m", false)
	e.publish("none", "n", "id-n", false)
	eventually(t, "both failed", func() bool { return e.counters("missing").Failed == 1 && e.counters("none").Failed == 1 })
	stop()
	if n := calls.Load(); n != 0 {
		t.Fatalf("handler ran %d times, want never", n)
	}
}

// DedupKey encodes what is not a valid key.
func TestDedupKeyEncodes(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	keys := make(chan string, 1)
	mw := middleware.Dedup(e.bucket("enc", kv.Config{}), middleware.DedupConfig{})
	h := consumer.HandlerFunc(func(ctx context.Context, m *consumer.Msg) error {
		k, _ := middleware.DedupKey(m)
		keys <- k
		return nil
	})
	if err := e.group.Handle("enc", consumer.Config{Subject: "enc", Middleware: []consumer.Middleware{mw}}, h); err != nil {
		t.Fatal(err)
	}
	stop := e.serve(1)
	e.publish("enc", "", "a b*", false)
	if got, want := <-keys, "enc.id64.YSBiKg"; got != want {
		t.Fatalf("key: got %q, want %q", got, want)
	}
	stop()
}
