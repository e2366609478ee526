package kv_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/corral-go/corral/codec"
	"github.com/corral-go/corral/connection"
	"github.com/corral-go/corral/internal/natstest"
	"github.com/corral-go/corral/kv"
	"github.com/corral-go/corral/supervisor"
)

func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

type settings struct {
	Limit int    `json:"limit"`
	Mode  string `json:"mode"`
}

func TestOperations(t *testing.T) {
	t.Parallel()
	srv := natstest.RunServer(t)
	ctx := ctxT(t)
	b, err := kv.Open("settings", kv.Config{History: 5}, connection.NewFixed(natstest.Connect(t, srv.URL())), codec.JSON[settings]{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.Get(ctx, "app.limits"); !errors.Is(err, kv.ErrKeyNotFound) || !errors.Is(err, jetstream.ErrKeyNotFound) {
		t.Fatalf("get of a missing key: %v", err)
	}
	r1, err := b.Create(ctx, "app.limits", settings{Limit: 1})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.Create(ctx, "app.limits", settings{Limit: 2}); !errors.Is(err, kv.ErrKeyExists) || !errors.Is(err, jetstream.ErrKeyExists) {
		t.Fatalf("create of an existing key: %v", err)
	}
	r2, err := b.CompareAndSet(ctx, "app.limits", settings{Limit: 2}, r1)
	if err != nil || r2 <= r1 {
		t.Fatalf("compare and set: %d, %v", r2, err)
	}
	if _, err := b.CompareAndSet(ctx, "app.limits", settings{Limit: 3}, r1); !errors.Is(err, kv.ErrRevisionMismatch) || !errors.Is(err, jetstream.ErrKeyExists) {
		t.Fatalf("compare and set on a stale revision: %v", err)
	}
	e, err := b.Get(ctx, "app.limits")
	if err != nil || e.Value.Limit != 2 || e.Revision != r2 || e.Op != kv.Put {
		t.Fatalf("get: %+v, %v", e, err)
	}
	if _, err := b.Put(ctx, "app.mode", settings{Mode: "fast"}); err != nil {
		t.Fatal(err)
	}
	keys, err := b.Keys(ctx)
	slices.Sort(keys)
	if err != nil || !slices.Equal(keys, []string{"app.limits", "app.mode"}) {
		t.Fatalf("keys: %v, %v", keys, err)
	}
	if err := b.Delete(ctx, "app.mode"); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Get(ctx, "app.mode"); !errors.Is(err, kv.ErrKeyNotFound) {
		t.Fatalf("get after delete: %v", err)
	}
	// A deleted key can be created again.
	if _, err := b.Create(ctx, "app.mode", settings{Mode: "slow"}); err != nil {
		t.Fatalf("create after delete: %v", err)
	}
	hist, err := b.History(ctx, "app.limits")
	if err != nil || len(hist) != 2 || hist[0].Value.Limit != 1 || hist[1].Value.Limit != 2 {
		t.Fatalf("history: %+v, %v", hist, err)
	}
	if err := b.Purge(ctx, "app.limits"); err != nil {
		t.Fatal(err)
	}
	hist, err = b.History(ctx, "app.limits")
	if err != nil || len(hist) != 1 || hist[0].Op != kv.Purge {
		t.Fatalf("history after purge: %+v, %v", hist, err)
	}
}

func TestUpdateUnderContention(t *testing.T) {
	t.Parallel()
	srv := natstest.RunServer(t)
	ctx := ctxT(t)
	// Each writer has its own connection, as separate processes would.
	incrementConcurrently(t, ctx, 10, 20, func() *kv.Bucket[int] {
		b, err := kv.Open("counters", kv.Config{}, connection.NewFixed(natstest.Connect(t, srv.URL())), codec.JSON[int]{})
		if err != nil {
			t.Fatal(err)
		}
		return b
	})
}

// incrementConcurrently runs writers goroutines, each with the bucket open
// returns, that increment "hits" each times with Update, then checks the
// exact total.
func incrementConcurrently(t *testing.T, ctx context.Context, writers, each int, open func() *kv.Bucket[int]) {
	t.Helper()
	var wg sync.WaitGroup
	errs := make(chan error, writers)
	for range writers {
		b := open()
		wg.Go(func() {
			for range each {
				if _, err := b.Update(ctx, "hits", func(old int, _ bool) (int, error) { return old + 1, nil }); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	e, err := open().Get(ctx, "hits")
	if err != nil || e.Value != writers*each {
		t.Fatalf("counter: got %d, %v; want %d", e.Value, err, writers*each)
	}
}

// A replicated bucket reports a lost compare-and-set as code 10164, not
// 10071: CompareAndSet and Create must still say so, and Update retry.
func TestUpdateUnderContentionReplicated(t *testing.T) {
	t.Parallel()
	cluster := natstest.RunCluster(t, 3)
	ctx := ctxT(t)
	open := func() *kv.Bucket[int] {
		t.Helper()
		b, err := kv.Open("counters", kv.Config{Replicas: 3}, connection.NewFixed(natstest.Connect(t, cluster.URLs())), codec.JSON[int]{})
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	b := open()
	// A node the cluster has just formed with may not yet count as online
	// for placement ("no suitable peers"): declare the bucket once it does.
	var declareErr error
	natstest.Eventually(t, 20*time.Second, func() bool {
		_, declareErr = b.Raw(ctx)
		return declareErr == nil
	}, func() string { return fmt.Sprintf("declare the R3 bucket: %v", declareErr) })
	r1, err := b.Put(ctx, "k", 1)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.Put(ctx, "k", 2); err != nil {
		t.Fatal(err)
	}
	if _, err := b.CompareAndSet(ctx, "k", 3, r1); !errors.Is(err, kv.ErrRevisionMismatch) ||
		!errors.Is(err, jetstream.ErrKeyRevisionMismatch) || !errors.Is(err, jetstream.ErrKeyExists) {
		t.Fatalf("compare and set on a stale revision: %v", err)
	}
	if _, err := b.Create(ctx, "k", 3); !errors.Is(err, kv.ErrKeyExists) || !errors.Is(err, jetstream.ErrKeyExists) {
		t.Fatalf("create of an existing key: %v", err)
	}
	// The counter starts deleted, so that the first round of creates also
	// races on a key that has a revision.
	if _, err := b.Put(ctx, "hits", 0); err != nil {
		t.Fatal(err)
	}
	if err := b.Delete(ctx, "hits"); err != nil {
		t.Fatal(err)
	}
	incrementConcurrently(t, ctx, 10, 10, open) // each writer has its own connection
}

func TestBadInput(t *testing.T) {
	t.Parallel()
	srv := natstest.RunServer(t)
	ctx := ctxT(t)
	conns := connection.NewFixed(natstest.Connect(t, srv.URL()))
	b, err := kv.Open("small", kv.Config{MaxValueSize: 16}, conns, codec.Bytes{})
	if err != nil {
		t.Fatal(err)
	}
	for _, key := range []string{"", ".a", "a.", "a..b", "a b", "a*", "a>", "ä", "a:b"} {
		if _, err := b.Put(ctx, key, []byte("x")); !errors.Is(err, kv.ErrInvalidKey) {
			t.Errorf("key %q: got %v, want ErrInvalidKey", key, err)
		}
	}
	for _, key := range []string{"a", "a.b", "A-z_0=9/x.y"} {
		if _, err := b.Put(ctx, key, []byte("x")); err != nil {
			t.Errorf("key %q: %v", key, err)
		}
	}
	if _, err := b.Put(ctx, "big", make([]byte, 17)); !errors.Is(err, kv.ErrValueTooLarge) {
		t.Fatalf("17 bytes into a 16-byte bucket: %v", err)
	}
	missing, err := kv.Open("missing", kv.Config{Bind: true}, conns, codec.Bytes{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := missing.Get(ctx, "k"); !errors.Is(err, kv.ErrBucketNotFound) || !errors.Is(err, jetstream.ErrBucketNotFound) {
		t.Fatalf("a missing bound bucket: %v", err)
	}
	_, err = b.Watch("w", kv.WatchConfig{Keys: []string{"a b"}}, func(context.Context, kv.Entry[[]byte]) error { return nil })
	if !errors.Is(err, kv.ErrInvalidKey) || strings.Count(err.Error(), "kv: ") != 1 {
		t.Fatalf("watch of an invalid key: got %v, want ErrInvalidKey, saying kv: once", err)
	}
	if _, err := kv.Open("bad name", kv.Config{}, conns, codec.Bytes{}); !errors.Is(err, supervisor.ErrInvalidConfig) {
		t.Fatalf("bad bucket name: %v", err)
	}
	if _, err := kv.Open("h", kv.Config{History: 65}, conns, codec.Bytes{}); !errors.Is(err, supervisor.ErrInvalidConfig) || !strings.Contains(err.Error(), "history") {
		t.Fatalf("history 65: %v", err)
	}
}

// record keeps what a watch delivered.
type record struct {
	mu      sync.Mutex
	entries []kv.Entry[int]
	synced  int
	changed chan struct{}
}

func newRecord() *record { return &record{changed: make(chan struct{}, 1)} }

func (r *record) fn(_ context.Context, e kv.Entry[int]) error {
	r.mu.Lock()
	if e.Op == kv.Synced {
		r.synced++
	} else {
		r.entries = append(r.entries, e)
	}
	r.mu.Unlock()
	select {
	case r.changed <- struct{}{}:
	default:
	}
	return nil
}

func (r *record) snapshot() ([]kv.Entry[int], int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]kv.Entry[int](nil), r.entries...), r.synced
}

func (r *record) waitFor(t *testing.T, what string, cond func([]kv.Entry[int], int) bool) {
	t.Helper()
	deadline := time.After(30 * time.Second)
	for {
		if cond(r.snapshot()) {
			return
		}
		select {
		case <-r.changed:
		case <-time.After(10 * time.Millisecond):
		case <-deadline:
			got, synced := r.snapshot()
			t.Fatalf("not within 30s: %s; got %d entries, synced %d", what, len(got), synced)
		}
	}
}

// serveTree runs services in a tree after a connection supervisor.
func serveTree(t *testing.T, conn *connection.Supervisor, services map[string]interface {
	Serve(context.Context) error
}) func() {
	t.Helper()
	tree := supervisor.NewTree("t", supervisor.Events{})
	if err := tree.Add("connection", conn, supervisor.Policy{RestartDelay: 10 * time.Millisecond}); err != nil {
		t.Fatal(err)
	}
	for name, svc := range services {
		if err := tree.Add(name, svc, supervisor.Policy{RestartDelay: 10 * time.Millisecond}); err != nil {
			t.Fatal(err)
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- tree.Serve(ctx) }()
	var once sync.Once
	stop := func() { once.Do(func() { cancel(); <-done }) }
	t.Cleanup(stop)
	return stop
}

func TestWatchSeesEveryChangeThroughRestartAndReplacement(t *testing.T) {
	t.Parallel()
	srv := natstest.RunServer(t)
	ctx := ctxT(t)
	conn, err := connection.New(connection.Config{Servers: []string{srv.URL()}, ReconnectWait: 20 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	// The bucket keeps every revision this test writes (about 34 per key),
	// so that a watch that falls behind across the restart still finds
	// them all: it cannot deliver what the bucket discarded.
	cfg := kv.Config{History: 64}
	writer, err := kv.Open("config", cfg, conn, codec.JSON[int]{})
	if err != nil {
		t.Fatal(err)
	}
	// Values present before the watch starts: the watch begins with them.
	first, err := kv.Open("config", cfg, connection.NewFixed(natstest.Connect(t, srv.URL())), codec.JSON[int]{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := first.Put(ctx, "app.a", 0); err != nil {
		t.Fatal(err)
	}
	rec := newRecord()
	w, err := writer.Watch("watch", kv.WatchConfig{Keys: []string{"app.*"}}, rec.fn)
	if err != nil {
		t.Fatal(err)
	}
	stop := serveTree(t, conn, map[string]interface{ Serve(context.Context) error }{"watch": w})

	var revs []uint64
	put := func(i int) {
		for {
			pctx, cancel := context.WithTimeout(ctx, 2*time.Second)
			rev, err := writer.Put(pctx, fmt.Sprintf("app.%c", 'a'+i%3), i)
			cancel()
			if err == nil {
				revs = append(revs, rev)
				return
			}
			if ctx.Err() != nil {
				t.Fatal(err)
			}
			time.Sleep(10 * time.Millisecond) // the server is restarting
		}
	}
	rec.waitFor(t, "initial value and sync", func(e []kv.Entry[int], synced int) bool { return len(e) == 1 && synced == 1 })
	for i := 1; i <= 100; i++ {
		put(i)
		switch i {
		case 40:
			srv.Restart()
		case 70:
			nc, _, err := conn.Conn(ctx)
			if err != nil {
				t.Fatal(err)
			}
			nc.Close() // closed for good: the watch follows the replacement
		}
	}
	rec.waitFor(t, "every change", func(e []kv.Entry[int], _ int) bool { return len(e) >= 101 })
	stop()
	got, synced := rec.snapshot()
	if synced != 1 || len(got) != 101 || got[0].Value != 0 {
		t.Fatalf("got %d entries (synced %d times), want the initial value and 100 changes", len(got), synced)
	}
	for i, e := range got[1:] {
		if e.Revision != revs[i] || e.Value != i+1 || e.Op != kv.Put {
			t.Fatalf("change %d: got %+v, want revision %d value %d", i+1, e, revs[i], i+1)
		}
	}
}

func TestWatchReportsExpiry(t *testing.T) {
	t.Parallel()
	srv := natstest.RunServer(t)
	ctx := ctxT(t)
	conns := connection.NewFixed(natstest.Connect(t, srv.URL()))
	b, err := kv.Open("sessions", kv.Config{LimitMarkerTTL: time.Second}, conns, codec.JSON[int]{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.Get(ctx, "warmup"); !errors.Is(err, kv.ErrKeyNotFound) { // declares the bucket
		t.Fatal(err)
	}
	rec := newRecord()
	w, err := b.Watch("watch", kv.WatchConfig{UpdatesOnly: true}, rec.fn)
	if err != nil {
		t.Fatal(err)
	}
	wctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- w.Serve(wctx) }()
	rec.waitFor(t, "synced", func(_ []kv.Entry[int], synced int) bool { return synced == 1 })
	if _, err := b.CreateTTL(ctx, "s1", 7, time.Second); err != nil {
		t.Fatal(err)
	}
	rec.waitFor(t, "put then expiry", func(e []kv.Entry[int], _ int) bool { return len(e) == 2 })
	cancel()
	<-done
	got, _ := rec.snapshot()
	if got[0].Op != kv.Put || got[0].Value != 7 || got[1].Op != kv.Expired || got[1].Key != "s1" {
		t.Fatalf("got %+v", got)
	}
}
