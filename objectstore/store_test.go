package objectstore_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/corral-go/corral/connection"
	"github.com/corral-go/corral/internal/natstest"
	"github.com/corral-go/corral/objectstore"
	"github.com/corral-go/corral/supervisor"
)

// A store deleted after first use: calls fail with ErrStoreNotFound, then
// the store is declared again.
//
// Not parallel, as TestLargeObjectInBoundedMemory measures the heap.
func TestStoreDeletedIsReportedThenDeclaredAgain(t *testing.T) {
	s, nc := open(t, "gone")
	ctx := ctxT(t)
	if _, err := s.PutBytes(ctx, "doc", []byte("v1")); err != nil {
		t.Fatal(err)
	}
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	if err := js.DeleteObjectStore(ctx, "gone"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.PutBytes(ctx, "doc", []byte("lost")); !errors.Is(err, objectstore.ErrStoreNotFound) {
		t.Fatalf("put to a deleted store: %v, want ErrStoreNotFound", err)
	}
	if _, err := s.PutBytes(ctx, "doc", []byte("v2")); err != nil {
		t.Fatalf("put after the store was reported gone: %v, want it declared again", err)
	}
	if err := js.DeleteObjectStore(ctx, "gone"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.GetBytes(ctx, "doc"); !errors.Is(err, objectstore.ErrStoreNotFound) {
		t.Fatalf("get from a deleted store: %v, want ErrStoreNotFound", err)
	}
	if _, err := s.GetBytes(ctx, "doc"); !errors.Is(err, objectstore.ErrNotFound) {
		t.Fatalf("get after the store was declared again: %v, want ErrNotFound", err)
	}
}

// cancelling yields left bytes, then cancels the put's context while more
// data would follow.
type cancelling struct {
	left   int
	cancel context.CancelFunc
}

func (c *cancelling) Read(b []byte) (int, error) {
	if c.left == 0 {
		c.cancel()
		return len(b), nil
	}
	n := min(len(b), c.left)
	c.left -= n
	return n, nil
}

// A put whose ctx is cancelled midway fails with the ctx's error and
// removes the chunks it stored.
// Not parallel, as TestLargeObjectInBoundedMemory measures the heap.
func TestCancelledPutLeavesNoChunks(t *testing.T) {
	s, nc := open(t, "cancel")
	ctx := ctxT(t)
	pctx, cancel := context.WithCancel(ctx)
	defer cancel()
	if _, err := s.Put(pctx, "doc", &cancelling{left: 4 << 20, cancel: cancel}); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled put: %v, want context.Canceled", err)
	}
	if _, err := s.Info(ctx, "doc"); !errors.Is(err, objectstore.ErrNotFound) {
		t.Fatalf("a cancelled object is visible: %v", err)
	}
	if n := streamOf(t, ctx, nc, "cancel").State.Bytes; n > 64<<10 {
		t.Fatalf("the cancelled put's chunks were kept: %d bytes in the store", n)
	}
}

// A watch whose store was deleted declares it again when it restarts.
//
// Not parallel, as TestLargeObjectInBoundedMemory measures the heap.
func TestWatchDeclaresDeletedStoreAgain(t *testing.T) {
	s, nc := open(t, "gone")
	ctx := ctxT(t)
	synced := make(chan struct{}, 1)
	w, err := s.Watch("w", objectstore.WatchConfig{}, func(_ context.Context, c objectstore.Change) error {
		if c.Synced {
			select {
			case synced <- struct{}{}:
			default:
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	lastErr := natstest.Restart(t, w)
	select {
	case <-synced:
	case <-ctx.Done():
		t.Fatal("never synced")
	}
	created := natstest.Signal(t, nc, "$JS.EVENT.ADVISORY.STREAM.CREATED.OBJ_gone")
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	if err := js.DeleteObjectStore(ctx, "gone"); err != nil {
		t.Fatal(err)
	}
	select {
	case <-created:
	case <-ctx.Done():
		t.Fatalf("the watch never declared its deleted store again; it last returned %v", lastErr())
	}
}

// A store declared again after it was found deleted emits StoreRecreated,
// once; its first declaration emits nothing.
//
// Not parallel, as TestLargeObjectInBoundedMemory measures the heap.
func TestStoreRecreatedEvent(t *testing.T) {
	srv := natstest.RunServer(t)
	ctx := ctxT(t)
	nc, err := nats.Connect(srv.URL())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	rec := natstest.NewRecorder()
	s, err := objectstore.Open("gone", objectstore.Config{Events: supervisor.Events{Hook: rec.Hook}}, connection.NewFixed(nc))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.PutBytes(ctx, "doc", []byte("v1")); err != nil {
		t.Fatal(err)
	}
	if n := rec.Len(); n != 0 {
		t.Fatalf("%d events after the first declaration, want none: %v", n, rec.Events())
	}
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	if err := js.DeleteObjectStore(ctx, "gone"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.GetBytes(ctx, "doc"); !errors.Is(err, objectstore.ErrStoreNotFound) {
		t.Fatalf("get from a deleted store: %v, want ErrStoreNotFound", err)
	}
	if _, err := s.PutBytes(ctx, "doc", []byte("v2")); err != nil {
		t.Fatalf("put after the store was reported gone: %v, want it declared again", err)
	}
	ev, _ := natstest.WaitFor[objectstore.StoreRecreated](t, rec, 0, 10*time.Second, nil)
	if ev.Store != "gone" || ev.Kind() != "objectstore.store_recreated" || ev.Level() != supervisor.WarnLevel || ev.When().IsZero() {
		t.Fatalf("event: %+v", ev)
	}
	if got, err := s.GetBytes(ctx, "doc"); err != nil || string(got) != "v2" {
		t.Fatalf("get: %q %v", got, err)
	}
	if n := len(natstest.All[objectstore.StoreRecreated](rec)); n != 1 {
		t.Fatalf("%d StoreRecreated events, want 1", n)
	}
}

// A bound store that does not exist: ErrStoreNotFound, naming the store,
// saying objectstore: once.
func TestBoundStoreMissingReadsOnce(t *testing.T) {
	t.Parallel()
	_, nc := open(t, "unused")
	s, err := objectstore.Open("absent", objectstore.Config{Bind: true}, connection.NewFixed(nc))
	if err != nil {
		t.Fatal(err)
	}
	_, err = s.GetBytes(ctxT(t), "doc")
	if !errors.Is(err, objectstore.ErrStoreNotFound) || !strings.Contains(err.Error(), "absent") ||
		strings.Count(err.Error(), "objectstore: ") != 1 {
		t.Fatalf("get from a missing bound store: got %v, want ErrStoreNotFound naming absent, saying objectstore: once", err)
	}
}
