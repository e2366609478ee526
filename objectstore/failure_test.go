package objectstore_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"io"
	mrand "math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/corral-go/corral/connection"
	"github.com/corral-go/corral/objectstore"
)

// truncated fails with io.ErrUnexpectedEOF after n bytes, as a cut-off
// HTTP body or gzip stream does.
type truncated struct{ n int }

func (r *truncated) Read(p []byte) (int, error) {
	if r.n == 0 {
		return 0, io.ErrUnexpectedEOF
	}
	k := min(len(p), r.n)
	r.n -= k
	return k, nil
}

func TestPutOfATruncatedReaderFails(t *testing.T) {
	t.Parallel()
	s, _ := open(t, "trunc")
	ctx := ctxT(t)
	old := bytes.Repeat([]byte("old"), 100)
	if _, err := s.PutBytes(ctx, "x", old); err != nil {
		t.Fatal(err)
	}
	if info, err := s.Put(ctx, "x", &truncated{n: 1000}); !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Fatalf("put of a reader that failed with io.ErrUnexpectedEOF: %+v, %v", info, err)
	}
	if got, err := s.GetBytes(ctx, "x"); err != nil || !bytes.Equal(got, old) {
		t.Fatalf("after the failed put: %q, %v; want the previous version", got, err)
	}
}

// A put's ctx ends at a random moment while it replaces an object: what
// is visible afterwards is always one whole version.
func TestCancelledPutNeverLeavesABrokenObject(t *testing.T) {
	t.Parallel()
	s, _ := open(t, "cancelled")
	ctx := ctxT(t)
	old, next := []byte("old"), []byte("new")
	if _, err := s.PutBytes(ctx, "x", old); err != nil {
		t.Fatal(err)
	}
	for i := range 200 {
		pctx, cancel := context.WithTimeout(ctx, time.Duration(mrand.IntN(1500))*time.Microsecond)
		_, perr := s.PutBytes(pctx, "x", next)
		cancel()
		got, err := s.GetBytes(ctx, "x")
		switch {
		case err != nil:
			t.Fatalf("%d: after a put that returned %v the object is broken: %v", i, perr, err)
		case perr == nil && !bytes.Equal(got, next):
			t.Fatalf("%d: the put succeeded but the object is %q", i, got)
		case !bytes.Equal(got, old) && !bytes.Equal(got, next):
			t.Fatalf("%d: the object is %q", i, got)
		}
		if bytes.Equal(got, next) {
			if _, err := s.PutBytes(ctx, "x", old); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// gateWriter signals its first write and holds it until released.
type gateWriter struct {
	first, release chan struct{}
	n              int
}

func newGateWriter() *gateWriter {
	return &gateWriter{first: make(chan struct{}), release: make(chan struct{})}
}

func (w *gateWriter) Write(p []byte) (int, error) {
	if w.n == 0 {
		close(w.first)
		<-w.release
	}
	w.n += len(p)
	return len(p), nil
}

func putChunks(t *testing.T, ctx context.Context, s *objectstore.Store, name string, chunks int) {
	t.Helper()
	data := make([]byte, chunks*128<<10)
	_, _ = rand.Read(data)
	if _, err := s.PutBytes(ctx, name, data); err != nil {
		t.Fatal(err)
	}
}

// An object replaced while it is being read: the get fails with
// ErrNotFound instead of waiting for chunks that are gone.
func TestGetOfAReplacedObjectFails(t *testing.T) {
	t.Parallel()
	s, _ := open(t, "replaced")
	ctx := ctxT(t)
	putChunks(t, ctx, s, "big", 12)
	w := newGateWriter()
	done := make(chan error, 1)
	go func() { _, err := s.Get(ctx, "big", w); done <- err }()
	<-w.first
	if _, err := s.PutBytes(ctx, "big", []byte("new")); err != nil {
		t.Fatal(err)
	}
	close(w.release)
	if err := <-done; !errors.Is(err, objectstore.ErrNotFound) {
		t.Fatalf("get of an object replaced meanwhile: %v, want ErrNotFound", err)
	}
}

// The store is deleted while an object is being read: the get fails, and
// does not outlive its ctx.
func TestGetFromADeletedStoreFails(t *testing.T) {
	t.Parallel()
	s, nc := open(t, "deleted")
	ctx := ctxT(t)
	putChunks(t, ctx, s, "big", 12)
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	w := newGateWriter()
	done := make(chan error, 1)
	go func() { _, err := s.Get(ctx, "big", w); done <- err }()
	<-w.first
	if err := js.DeleteObjectStore(ctx, "deleted"); err != nil {
		t.Fatal(err)
	}
	close(w.release)
	if err := <-done; err == nil || ctx.Err() != nil {
		t.Fatalf("get from a store deleted meanwhile: %v (ctx: %v), want it to fail before its ctx ends", err, ctx.Err())
	}
}

// The one chunk of an object is gone between its info and its read.
func TestGetOfAVanishedChunkIsNotFound(t *testing.T) {
	t.Parallel()
	s, nc := open(t, "vanished")
	ctx := ctxT(t)
	info, err := s.PutBytes(ctx, "one", []byte("x"))
	if err != nil {
		t.Fatal(err)
	}
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	stream, err := js.Stream(ctx, "OBJ_vanished")
	if err != nil {
		t.Fatal(err)
	}
	if err := stream.Purge(ctx, jetstream.WithPurgeSubject("$O.vanished.C."+info.NUID)); err != nil {
		t.Fatal(err)
	}
	if _, err := s.GetBytes(ctx, "one"); !errors.Is(err, objectstore.ErrNotFound) {
		t.Fatalf("get of an object without its chunk: %v, want ErrNotFound", err)
	}
}

// A store made by other tools, without direct get, is read all the same.
func TestGetWithoutDirectGet(t *testing.T) {
	t.Parallel()
	_, nc := open(t, "unused")
	ctx := ctxT(t)
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: "OBJ_nodirect",
		Subjects: []string{"$O.nodirect.C.>", "$O.nodirect.M.>"}, AllowRollup: true,
		Discard: jetstream.DiscardNew, AllowDirect: false}); err != nil {
		t.Fatal(err)
	}
	s, err := objectstore.Open("nodirect", objectstore.Config{Bind: true}, connection.NewFixed(nc))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.PutBytes(ctx, "one", []byte("hello")); err != nil {
		t.Fatal(err)
	}
	if got, err := s.GetBytes(ctx, "one"); err != nil || string(got) != "hello" {
		t.Fatalf("get: %q, %v", got, err)
	}
}

// Declaring a store again (it was deleted) reuses the connection's async
// publisher: no subscription is added per declaration.
func TestRedeclaringAddsNoSubscription(t *testing.T) {
	t.Parallel()
	s, nc := open(t, "redeclared")
	ctx := ctxT(t)
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.PutBytes(ctx, "x", []byte("a")); err != nil {
		t.Fatal(err)
	}
	subs := nc.NumSubscriptions()
	for range 3 {
		if err := js.DeleteObjectStore(ctx, "redeclared"); err != nil {
			t.Fatal(err)
		}
		if _, err := s.Info(ctx, "x"); !errors.Is(err, objectstore.ErrStoreNotFound) {
			t.Fatalf("info in a deleted store: %v", err)
		}
		if _, err := s.PutBytes(ctx, "x", []byte("a")); err != nil {
			t.Fatal(err)
		}
	}
	if got := nc.NumSubscriptions(); got != subs {
		t.Fatalf("%d subscriptions after declaring the store 3 more times, %d before", got, subs)
	}
}

// Puts of one name at once: the last one stored wins, and no version's
// chunks are left behind.
func TestConcurrentPutsLeaveNoChunksBehind(t *testing.T) {
	t.Parallel()
	s, nc := open(t, "concurrent")
	ctx := ctxT(t)
	data := make([]byte, 3*128<<10)
	for range 20 {
		var wg sync.WaitGroup
		for range 3 {
			wg.Go(func() {
				if _, err := s.PutBytes(ctx, "x", data); err != nil {
					t.Error(err)
				}
			})
		}
		wg.Wait()
	}
	if n := streamOf(t, ctx, nc, "concurrent").State.Msgs; n != 4 {
		t.Fatalf("the store holds %d messages for one 3-chunk object, want 4", n)
	}
}
