package kv_test

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/corral-go/corral/connection"
	"github.com/corral-go/corral/internal/natstest"
	"github.com/corral-go/corral/kv"
)

// failingWatch records what a watch delivers, failing the calls for which
// fail returns true; Serve then returns, as it would to its supervisor.
func failingWatch(t *testing.T, b *kv.Bucket[int], rec *record, fail func(n int, e kv.Entry[int]) bool) *kv.Watch[int] {
	t.Helper()
	n := 0 // calls are sequential
	w, err := b.Watch("w", kv.WatchConfig{}, func(ctx context.Context, e kv.Entry[int]) error {
		n++
		if fail(n, e) {
			return fmt.Errorf("call %d fails", n)
		}
		return rec.fn(ctx, e)
	})
	if err != nil {
		t.Fatal(err)
	}
	return w
}

// serveUntilSynced serves w until it has delivered Synced.
func serveUntilSynced(t *testing.T, ctx context.Context, w *kv.Watch[int], rec *record) {
	t.Helper()
	sctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- w.Serve(sctx) }()
	rec.waitFor(t, "synced", func(_ []kv.Entry[int], s int) bool { return s > 0 })
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Errorf("serve: %v", err)
	}
}

func historyBucket(t *testing.T, ctx context.Context) *kv.Bucket[int] {
	t.Helper()
	srv := natstest.RunServer(t)
	b, err := kv.Open("cfg", kv.Config{History: 10}, connection.NewFixed(connect(t, srv.URL())), kv.JSON[int]{})
	if err != nil {
		t.Fatal(err)
	}
	for i := 1; i <= 5; i++ {
		if _, err := b.Put(ctx, "a", i); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := b.Put(ctx, "b", 1); err != nil {
		t.Fatal(err)
	}
	return b
}

func checkCurrent(t *testing.T, rec *record) {
	t.Helper()
	got, synced := rec.snapshot()
	var s []string
	for _, e := range got {
		s = append(s, fmt.Sprintf("%s=%d", e.Key, e.Value))
	}
	if fmt.Sprint(s) != "[a=5 b=1]" || synced != 1 {
		t.Errorf("delivered %v and %d Synced, want the current values [a=5 b=1] once, then Synced", s, synced)
	}
}

// A watch that fails before Synced starts the current values again: it
// must not replay the keys' history, nor deliver a value twice.
func TestWatchFailureBeforeSyncedDeliversCurrentValuesOnce(t *testing.T) {
	t.Parallel()
	for _, failAt := range []int{1, 2} {
		t.Run(fmt.Sprintf("call %d fails", failAt), func(t *testing.T) {
			t.Parallel()
			ctx := ctxT(t)
			b := historyBucket(t, ctx)
			rec := newRecord()
			w := failingWatch(t, b, rec, func(n int, _ kv.Entry[int]) bool { return n == failAt })
			if err := w.Serve(ctx); err == nil || ctx.Err() != nil {
				t.Fatalf("first serve: %v, want the failure", err)
			}
			serveUntilSynced(t, ctx, w, rec)
			checkCurrent(t, rec)
		})
	}
}

// A failed Synced call is made again when the watch is served again,
// although no value changed.
func TestWatchRetriesFailedSynced(t *testing.T) {
	t.Parallel()
	ctx := ctxT(t)
	b := historyBucket(t, ctx)
	rec := newRecord()
	failed := false
	w := failingWatch(t, b, rec, func(_ int, e kv.Entry[int]) bool {
		if e.Op == kv.Synced && !failed {
			failed = true
			return true
		}
		return false
	})
	if err := w.Serve(ctx); err == nil || ctx.Err() != nil {
		t.Fatalf("first serve: %v, want the failure", err)
	}
	serveUntilSynced(t, ctx, w, rec)
	checkCurrent(t, rec)
}
