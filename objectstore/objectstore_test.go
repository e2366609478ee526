package objectstore_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"hash"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/corral-go/corral/connection"
	"github.com/corral-go/corral/internal/natstest"
	"github.com/corral-go/corral/objectstore"
)

func open(t *testing.T, name string) (*objectstore.Store, *nats.Conn) {
	t.Helper()
	srv := natstest.RunServer(t)
	nc, err := nats.Connect(srv.URL())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	s, err := objectstore.Open(name, objectstore.Config{}, connection.NewFixed(nc))
	if err != nil {
		t.Fatal(err)
	}
	return s, nc
}

// streamOf is the store's stream as the server has it now.
func streamOf(t *testing.T, ctx context.Context, nc *nats.Conn, store string) *jetstream.StreamInfo {
	t.Helper()
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	stream, err := js.Stream(ctx, "OBJ_"+store)
	if err != nil {
		t.Fatal(err)
	}
	return stream.CachedInfo()
}

func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	t.Cleanup(cancel)
	return ctx
}

func TestOperations(t *testing.T) {
	t.Parallel()
	s, _ := open(t, "docs")
	ctx := ctxT(t)
	if _, err := s.PutBytes(ctx, "a.txt", []byte("hello")); err != nil {
		t.Fatal(err)
	}
	got, err := s.GetBytes(ctx, "a.txt")
	if err != nil || string(got) != "hello" {
		t.Fatalf("get: %q, %v", got, err)
	}
	if info, err := s.PutBytes(ctx, "empty", nil); err != nil || info.Size != 0 || info.Chunks != 0 {
		t.Fatalf("put of an empty object: %+v, %v", info, err)
	}
	if got, err := s.GetBytes(ctx, "empty"); err != nil || len(got) != 0 {
		t.Fatalf("get of an empty object: %q, %v", got, err)
	}
	if _, err := s.PutBytes(ctx, "", []byte("x")); !errors.Is(err, jetstream.ErrBadObjectMeta) {
		t.Fatalf("put without a name: %v, want ErrBadObjectMeta", err)
	}
	dir := t.TempDir()
	src := filepath.Join(dir, "src.bin")
	if err := os.WriteFile(src, bytes.Repeat([]byte("x"), 300_000), 0o600); err != nil {
		t.Fatal(err)
	}
	info, err := s.PutFile(ctx, "b.bin", src)
	if err != nil || info.Size != 300_000 || info.Chunks < 2 {
		t.Fatalf("put file: %+v, %v", info, err)
	}
	dst := filepath.Join(dir, "dst.bin")
	if err := s.GetFile(ctx, "b.bin", dst); err != nil {
		t.Fatal(err)
	}
	if a, b := sum(t, src), sum(t, dst); a != b {
		t.Fatal("the file got differs from the file put")
	}
	if _, err := s.AddLink(ctx, "latest", "a.txt"); err != nil {
		t.Fatal(err)
	}
	if got, err := s.GetBytes(ctx, "latest"); err != nil || string(got) != "hello" {
		t.Fatalf("get through a link: %q, %v", got, err)
	}
	list, err := s.List(ctx)
	if err != nil || len(list) != 4 { // a.txt, empty, b.bin, latest
		t.Fatalf("list: %d, %v", len(list), err)
	}
	if err := s.Delete(ctx, "a.txt"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.GetBytes(ctx, "a.txt"); !errors.Is(err, objectstore.ErrNotFound) || !errors.Is(err, jetstream.ErrObjectNotFound) {
		t.Fatalf("get after delete: %v", err)
	}
	if _, err := s.Info(ctx, "never"); !errors.Is(err, objectstore.ErrNotFound) {
		t.Fatalf("info of a missing object: %v", err)
	}
}

func sum(t *testing.T, path string) [32]byte {
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return sha256.Sum256(data)
}

// pattern yields n deterministic bytes without holding them.
type pattern struct{ left, i int }

func (p *pattern) Read(b []byte) (int, error) {
	if p.left == 0 {
		return 0, io.EOF
	}
	n := min(len(b), p.left)
	for k := range n {
		b[k] = byte(p.i * 31)
		p.i++
	}
	p.left -= n
	return n, nil
}

// Not parallel: the heap measured is the process's, so it runs alone.
func TestLargeObjectInBoundedMemory(t *testing.T) {
	// The server is a child process, so that the heap measured is ours.
	proc := natstest.StartProcess(t)
	nc, err := nats.Connect(proc.URL())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	s, err := objectstore.Open("big", objectstore.Config{}, connection.NewFixed(nc))
	if err != nil {
		t.Fatal(err)
	}
	ctx := ctxT(t)
	const size = 64 << 20
	var peak atomic.Uint64
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		for {
			var ms runtime.MemStats
			runtime.ReadMemStats(&ms)
			if ms.HeapInuse > peak.Load() {
				peak.Store(ms.HeapInuse)
			}
			select {
			case <-stop:
				return
			case <-time.After(5 * time.Millisecond):
			}
		}
	})
	// Frequent collections, so that the peak is what is held, not garbage
	// waiting for the next one.
	defer debug.SetGCPercent(debug.SetGCPercent(10))
	runtime.GC()
	var base runtime.MemStats
	runtime.ReadMemStats(&base)

	if _, err := s.Put(ctx, "blob", &pattern{left: size}); err != nil {
		t.Fatal(err)
	}
	h := sha256.New()
	info, err := s.Get(ctx, "blob", h)
	close(stop)
	wg.Wait()
	if err != nil || info.Size != size {
		t.Fatalf("get: %+v, %v", info, err)
	}
	want := sha256.New()
	_, _ = io.Copy(want, &pattern{left: size})
	if !bytes.Equal(h.Sum(nil), want.Sum(nil)) {
		t.Fatal("the object got differs from the object put")
	}
	// Chunks are 128KiB: a put holds at most 8 unacknowledged, a get 4
	// unwritten; a copy of the object would add 64MiB. The margin is for
	// the race detector's allocations and the collector's pacing.
	grew := int64(peak.Load()) - int64(base.HeapInuse)
	t.Logf("heap grew by at most %.1f MiB while putting and getting 64MiB", float64(grew)/(1<<20))
	if grew > 32<<20 {
		t.Fatalf("heap grew by %d MiB while moving a 64MiB object", grew>>20)
	}
}

func TestDigestMismatchIsDetected(t *testing.T) {
	t.Parallel()
	s, nc := open(t, "corrupt")
	ctx := ctxT(t)
	info, err := s.PutBytes(ctx, "doc", []byte("the real content"))
	if err != nil {
		t.Fatal(err)
	}
	// Rewrite the object's description with a wrong digest.
	info.Digest = "SHA-256=" + "47DEQpj8HBSa-_TImW-5JCeuQeRkm5NMpJWZG3hSuFU="
	meta, _ := json.Marshal(info)
	msg := nats.NewMsg("$O.corrupt.M." + "ZG9j") // base64url("doc")
	msg.Data = meta
	msg.Header.Set("Nats-Rollup", "sub")
	js, _ := jetstream.New(nc)
	if _, err := js.PublishMsg(ctx, msg); err != nil {
		t.Fatal(err)
	}
	if _, err := s.GetBytes(ctx, "doc"); !errors.Is(err, objectstore.ErrDigestMismatch) || !errors.Is(err, jetstream.ErrDigestMismatch) {
		t.Fatalf("got %v, want a digest mismatch", err)
	}
	dst := filepath.Join(t.TempDir(), "doc")
	if err := s.GetFile(ctx, "doc", dst); !errors.Is(err, objectstore.ErrDigestMismatch) {
		t.Fatalf("get file: %v", err)
	}
	if _, err := os.Stat(dst); !errors.Is(err, os.ErrNotExist) {
		t.Fatal("a corrupt object was left at the destination")
	}
}

type failing struct {
	left int
}

func (f *failing) Read(b []byte) (int, error) {
	if f.left == 0 {
		return 0, errors.New("disk gone")
	}
	n := min(len(b), f.left)
	f.left -= n
	return n, nil
}

func TestInterruptedPutLeavesNoHalfObject(t *testing.T) {
	t.Parallel()
	s, nc := open(t, "half")
	ctx := ctxT(t)
	if _, err := s.PutBytes(ctx, "doc", []byte("version 1")); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Put(ctx, "doc", &failing{left: 1 << 20}); err == nil {
		t.Fatal("a put whose reader failed succeeded")
	}
	got, err := s.GetBytes(ctx, "doc")
	if err != nil || string(got) != "version 1" {
		t.Fatalf("after an interrupted put: %q, %v; want the previous version", got, err)
	}
	if _, err := s.Put(ctx, "new", &failing{left: 1 << 20}); err == nil {
		t.Fatal("a put whose reader failed succeeded")
	}
	if _, err := s.Info(ctx, "new"); !errors.Is(err, objectstore.ErrNotFound) {
		t.Fatalf("an interrupted new object is visible: %v", err)
	}
	if n := streamOf(t, ctx, nc, "half").State.Bytes; n > 64<<10 {
		t.Fatalf("the interrupted chunks were kept: %d bytes in the store", n)
	}
}

// A put the store has no room for fails, and the previous version stays
// whole: the chunks are all acknowledged before the object is replaced.
func TestPutIntoAFullStoreKeepsThePreviousVersion(t *testing.T) {
	t.Parallel()
	srv := natstest.RunServer(t)
	nc, err := nats.Connect(srv.URL())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	s, err := objectstore.Open("full", objectstore.Config{MaxBytes: 1 << 20}, connection.NewFixed(nc))
	if err != nil {
		t.Fatal(err)
	}
	ctx := ctxT(t)
	v1 := bytes.Repeat([]byte("v1"), 100<<10)
	if _, err := s.PutBytes(ctx, "doc", v1); err != nil {
		t.Fatal(err)
	}
	// Sizes around the room left, where the last chunks are refused while
	// the first are stored.
	for _, size := range []int{850 << 10, 900 << 10, 1 << 20, 2 << 20} {
		if _, err := s.Put(ctx, "doc", &pattern{left: size}); err == nil {
			t.Fatalf("a %d-byte put into a store with %d bytes of room succeeded", size, 1<<20-len(v1))
		}
		got, err := s.GetBytes(ctx, "doc")
		if err != nil || !bytes.Equal(got, v1) {
			t.Fatalf("after a %d-byte put failed: %d bytes, %v; want the previous version, %d bytes",
				size, len(got), err, len(v1))
		}
	}
}

// blockingWriter holds its first write until release is closed.
type blockingWriter struct {
	release <-chan struct{}
	h       hash.Hash
}

func (w *blockingWriter) Write(b []byte) (int, error) {
	<-w.release
	return w.h.Write(b)
}

// A get into a writer slower than nats.go's default timeout (5 s, which
// nats.go applies to a whole get when ctx has no deadline) completes.
func TestGetWaitsForASlowWriter(t *testing.T) {
	t.Parallel()
	s, nc := open(t, "slow")
	ctx := ctxT(t)
	const size = 1 << 20 // 8 chunks
	if _, err := s.Put(ctx, "doc", &pattern{left: size}); err != nil {
		t.Fatal(err)
	}
	release := make(chan struct{})
	timer := time.AfterFunc(6*time.Second, func() { close(release) })
	defer timer.Stop()
	w := &blockingWriter{release: release, h: sha256.New()}
	if _, err := s.Get(context.Background(), "doc", w); err != nil {
		t.Fatalf("get into a writer that took 6 s: %v", err)
	}
	want := sha256.New()
	_, _ = io.Copy(want, &pattern{left: size})
	if !bytes.Equal(w.h.Sum(nil), want.Sum(nil)) {
		t.Fatal("the object got differs from the object put")
	}
	// The get removed the consumer it read through.
	if n := streamOf(t, ctx, nc, "slow").State.Consumers; n != 0 {
		t.Fatalf("%d consumers left on the store's stream after a get", n)
	}
}

func TestWatch(t *testing.T) {
	t.Parallel()
	s, _ := open(t, "watched")
	ctx := ctxT(t)
	if _, err := s.PutBytes(ctx, "before", []byte("1")); err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var changes []objectstore.Change
	w, err := s.Watch("watch", objectstore.WatchConfig{}, func(_ context.Context, c objectstore.Change) error {
		mu.Lock()
		changes = append(changes, c)
		mu.Unlock()
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	wctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- w.Serve(wctx) }()
	count := func() int {
		mu.Lock()
		defer mu.Unlock()
		return len(changes)
	}
	natstest.Eventually(t, 20*time.Second, func() bool { return count() == 2 },
		func() string { return "the watch did not deliver the current object and sync" })
	if _, err := s.PutBytes(ctx, "after", []byte("2")); err != nil {
		t.Fatal(err)
	}
	if err := s.Delete(ctx, "before"); err != nil {
		t.Fatal(err)
	}
	natstest.Eventually(t, 20*time.Second, func() bool { return count() == 4 },
		func() string { return fmt.Sprintf("got %d changes, want 4", count()) })
	cancel()
	<-done
	mu.Lock()
	defer mu.Unlock()
	if changes[0].Info.Name != "before" || !changes[1].Synced || changes[2].Info.Name != "after" ||
		changes[3].Info.Name != "before" || !changes[3].Info.Deleted {
		t.Fatalf("changes: %+v %+v %+v %+v", changes[0], changes[1], changes[2], changes[3])
	}
}
