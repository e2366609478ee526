package kv_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/corral-go/corral/codec"
	"github.com/corral-go/corral/connection"
	"github.com/corral-go/corral/internal/natstest"
	"github.com/corral-go/corral/kv"
	"github.com/corral-go/corral/supervisor"
)

// A bucket deleted after first use: calls fail with ErrBucketNotFound,
// then the bucket is declared again.
func TestBucketDeletedIsReportedThenDeclaredAgain(t *testing.T) {
	t.Parallel()
	ctx := ctxT(t)
	b := deletedAfterUse(t, ctx)
	if _, err := b.Put(ctx, "k", "v"); !errors.Is(err, kv.ErrBucketNotFound) {
		t.Fatalf("put to a deleted bucket: %v, want ErrBucketNotFound", err)
	}
	if _, err := b.Put(ctx, "k", "v2"); err != nil {
		t.Fatalf("put after the bucket was reported gone: %v, want it declared again", err)
	}
	if e, err := b.Get(ctx, "k"); err != nil || e.Value != "v2" {
		t.Fatalf("get: %+v %v", e, err)
	}
}

// Get reports a deleted bucket as such, not as a missing key.
func TestBucketDeletedGet(t *testing.T) {
	t.Parallel()
	ctx := ctxT(t)
	b := deletedAfterUse(t, ctx)
	if _, err := b.Get(ctx, "k"); !errors.Is(err, kv.ErrBucketNotFound) {
		t.Fatalf("get from a deleted bucket: %v, want ErrBucketNotFound", err)
	}
	if _, err := b.Get(ctx, "k"); !errors.Is(err, kv.ErrKeyNotFound) {
		t.Fatalf("get after the bucket was declared again: %v, want ErrKeyNotFound", err)
	}
}

// A memory bucket is lost when the server restarts while the connection
// (the same *nats.Conn) reconnects: it must be declared again.
func TestMemoryBucketDeclaredAgainAfterServerRestart(t *testing.T) {
	t.Parallel()
	srv := natstest.RunServer(t)
	ctx := ctxT(t)
	reconnected := make(chan struct{}, 1)
	nc, err := nats.Connect(srv.URL(), nats.MaxReconnects(-1), nats.ReconnectWait(50*time.Millisecond),
		nats.ReconnectHandler(func(*nats.Conn) {
			select {
			case reconnected <- struct{}{}:
			default:
			}
		}))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	b, err := kv.Open("sessions", kv.Config{Storage: "memory"}, connection.NewFixed(nc), codec.String{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.Put(ctx, "k", "v"); err != nil {
		t.Fatal(err)
	}
	srv.Restart()
	select {
	case <-reconnected:
	case <-ctx.Done():
		t.Fatal("never reconnected")
	}
	if _, err := b.Put(ctx, "k", "v2"); err != nil && !errors.Is(err, kv.ErrBucketNotFound) {
		t.Fatalf("first put after the restart: %v, want success or ErrBucketNotFound", err)
	}
	if _, err := b.Put(ctx, "k", "v3"); err != nil {
		t.Fatalf("put after the restart: %v, want the bucket declared again", err)
	}
}

// deletedAfterUse returns a bucket that held k=v and was then deleted
// behind its back.
func deletedAfterUse(t *testing.T, ctx context.Context) *kv.Bucket[string] {
	t.Helper()
	srv := natstest.RunServer(t)
	nc := natstest.Connect(t, srv.URL())
	b, err := kv.Open("gone", kv.Config{}, connection.NewFixed(nc), codec.String{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.Put(ctx, "k", "v"); err != nil {
		t.Fatal(err)
	}
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	if err := js.DeleteKeyValue(ctx, "gone"); err != nil {
		t.Fatal(err)
	}
	return b
}

// A bucket declared again after it was found deleted emits
// BucketRecreated, once; its first declaration emits nothing. A typed
// view shares the declaration: the view that did not see the deletion
// uses the bucket declared again, not its old one.
func TestBucketRecreatedEvent(t *testing.T) {
	t.Parallel()
	srv := natstest.RunServer(t)
	ctx := ctxT(t)
	nc := natstest.Connect(t, srv.URL())
	rec := natstest.NewRecorder()
	b, err := kv.Open("gone", kv.Config{Events: supervisor.Events{Hook: rec.Hook}}, connection.NewFixed(nc), codec.String{})
	if err != nil {
		t.Fatal(err)
	}
	raw := kv.Typed(b, codec.Bytes{})
	if _, err := b.Put(ctx, "k", "v"); err != nil {
		t.Fatal(err)
	}
	if e, err := raw.Get(ctx, "k"); err != nil || string(e.Value) != "v" {
		t.Fatalf("get through the raw view: %+v %v", e, err)
	}
	if n := rec.Len(); n != 0 {
		t.Fatalf("%d events after the first declaration, want none: %v", n, rec.Events())
	}
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	if err := js.DeleteKeyValue(ctx, "gone"); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Put(ctx, "k", "lost"); !errors.Is(err, kv.ErrBucketNotFound) {
		t.Fatalf("put to a deleted bucket: %v, want ErrBucketNotFound", err)
	}
	if _, err := raw.Put(ctx, "k", []byte("v2")); err != nil {
		t.Fatalf("put through the raw view after the bucket was reported gone: %v, want it declared again", err)
	}
	ev, _ := natstest.WaitFor[kv.BucketRecreated](t, rec, 0, 10*time.Second, nil)
	if ev.Bucket != "gone" || ev.Kind() != "kv.bucket_recreated" || ev.Level() != supervisor.WarnLevel || ev.When().IsZero() {
		t.Fatalf("event: %+v", ev)
	}
	if e, err := b.Get(ctx, "k"); err != nil || e.Value != "v2" {
		t.Fatalf("get: %+v %v", e, err)
	}
	if n := len(natstest.All[kv.BucketRecreated](rec)); n != 1 {
		t.Fatalf("%d BucketRecreated events, want 1", n)
	}
}
