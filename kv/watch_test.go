package kv_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/corral-go/corral/codec"
	"github.com/corral-go/corral/connection"
	"github.com/corral-go/corral/internal/natstest"
	"github.com/corral-go/corral/kv"
	"github.com/corral-go/corral/supervisor"
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
	b, err := kv.Open("cfg", kv.Config{History: 10}, connection.NewFixed(natstest.Connect(t, srv.URL())), codec.JSON[int]{})
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

// A WatchFunc's error is the application's: one that says a deadline
// passed is not taken for JetStream being unavailable, and its failure is
// an error, not a warning.
func TestWatchFuncDeadlineIsNoOutage(t *testing.T) {
	t.Parallel()
	ctx := ctxT(t)
	b := historyBucket(t, ctx)
	w, err := b.Watch("w", kv.WatchConfig{}, func(context.Context, kv.Entry[int]) error {
		return fmt.Errorf("apply: %w", context.DeadlineExceeded)
	})
	if err != nil {
		t.Fatal(err)
	}
	err = w.Serve(ctx)
	if !errors.Is(err, context.DeadlineExceeded) || ctx.Err() != nil {
		t.Fatalf("serve: %v, want the WatchFunc's error", err)
	}
	if ev := (supervisor.ChildFailed{Err: err}); ev.Level() != supervisor.ErrorLevel {
		t.Fatalf("the WatchFunc's failure is logged at %v, want error", ev.Level())
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

// A watch the server would refuse at every start, or that would panic at
// its first delivery, fails when it is declared, saying why.
func TestWatchRejectedAtDeclaration(t *testing.T) {
	t.Parallel()
	b, err := kv.Open("cfg", kv.Config{}, connection.NewFixed(nil), codec.JSON[int]{}) // nothing is contacted
	if err != nil {
		t.Fatal(err)
	}
	rec := newRecord()
	if _, err := b.Watch("w", kv.WatchConfig{}, nil); !errors.Is(err, supervisor.ErrInvalidConfig) || !strings.Contains(err.Error(), "nil") {
		t.Errorf("nil WatchFunc: %v, want supervisor.ErrInvalidConfig", err)
	}
	for _, tc := range []struct {
		keys []string
		bad  []string // the two keys the error names; nil when valid
	}{
		{[]string{"app.a", "app.b"}, nil},
		{[]string{"a.*", "b.*"}, nil},
		{[]string{"a.*", "*.b"}, nil}, // they share a.b, but neither contains the other
		{[]string{"a.*", "a.b.c"}, nil},
		{[]string{"a.>", "a"}, nil},
		{[]string{"app.*", "app.a"}, []string{"app.*", "app.a"}},
		{[]string{"x", "app.a", "app.*"}, []string{"app.a", "app.*"}},
		{[]string{"a.b.c", "a.>"}, []string{"a.b.c", "a.>"}},
		{[]string{"a.*.c", "a.>"}, []string{"a.*.c", "a.>"}},
		{[]string{"*.*", "a.*"}, []string{"*.*", "a.*"}},
		{[]string{"k", "k"}, []string{"k", "k"}},
		{[]string{">", "a"}, []string{">", "a"}},
	} {
		_, err := b.Watch("w", kv.WatchConfig{Keys: tc.keys}, rec.fn)
		switch {
		case tc.bad == nil && err != nil:
			t.Errorf("keys %q: %v", tc.keys, err)
		case tc.bad != nil && !errors.Is(err, supervisor.ErrInvalidConfig):
			t.Errorf("keys %q: %v, want supervisor.ErrInvalidConfig", tc.keys, err)
		case tc.bad != nil:
			for _, k := range tc.bad {
				if !strings.Contains(err.Error(), fmt.Sprintf("%q", k)) {
					t.Errorf("keys %q: %q does not name %q", tc.keys, err, k)
				}
			}
		}
	}
}

// Keys that share some subjects without one containing the other are
// accepted by the server: each revision is delivered once.
func TestWatchOfIntersectingKeys(t *testing.T) {
	t.Parallel()
	srv := natstest.RunServer(t)
	ctx := ctxT(t)
	b, err := kv.Open("cfg", kv.Config{}, connection.NewFixed(natstest.Connect(t, srv.URL())), codec.JSON[int]{})
	if err != nil {
		t.Fatal(err)
	}
	for i, k := range []string{"a.b", "a.c", "x.b", "x.c"} {
		if _, err := b.Put(ctx, k, i); err != nil {
			t.Fatal(err)
		}
	}
	rec := newRecord()
	w, err := b.Watch("w", kv.WatchConfig{Keys: []string{"a.*", "*.b"}}, rec.fn)
	if err != nil {
		t.Fatal(err)
	}
	serveUntilSynced(t, ctx, w, rec)
	got, _ := rec.snapshot()
	var keys []string
	for _, e := range got {
		keys = append(keys, e.Key)
	}
	if fmt.Sprint(keys) != "[a.b a.c x.b]" {
		t.Errorf("delivered %v, want [a.b a.c x.b]", keys)
	}
}

// A watch that fails before Synced, while keys are written, starts again
// after the last revision it delivered: it delivers each current value it
// had yet to deliver, and every revision written since it started, a
// revision rewritten before the restart included; a revision superseded
// before the watch started is still not delivered.
func TestWatchFailureBeforeSyncedMissesNoRevisionWrittenSince(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		before []string // keys written before the watch, revisions 1, 2, ...
		fail   uint64   // the revision whose delivery fails, after rewrite was put
		put    []string // keys written during that failing delivery
		want   string   // key=revision delivered, in order
	}{
		// The campaign's case: revision 2 is rewritten while the watch,
		// which had delivered nothing, is down.
		{"nothing delivered", []string{"a", "b"}, 1, []string{"b"}, "[a=1 b=2 b=3]"},
		{"revision delivered", []string{"a", "b", "c"}, 2, []string{"b"}, "[a=1 b=2 c=3 b=4]"},
		{"superseded before the watch", []string{"a", "b", "a", "c"}, 2, []string{"a", "d"}, "[b=2 a=3 c=4 a=5 d=6]"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ctx := ctxT(t)
			srv := natstest.RunServer(t)
			b, err := kv.Open("cfg", kv.Config{History: 10}, connection.NewFixed(natstest.Connect(t, srv.URL())), codec.JSON[int]{})
			if err != nil {
				t.Fatal(err)
			}
			for i, k := range tc.before {
				if _, err := b.Put(ctx, k, i+1); err != nil {
					t.Fatal(err)
				}
			}
			rec := newRecord()
			failed := false
			w, err := b.Watch("w", kv.WatchConfig{}, func(ctx context.Context, e kv.Entry[int]) error {
				if e.Revision == tc.fail && !failed {
					failed = true
					for _, k := range tc.put {
						if _, err := b.Put(ctx, k, 0); err != nil {
							return err
						}
					}
					return errors.New("fails once")
				}
				return rec.fn(ctx, e)
			})
			if err != nil {
				t.Fatal(err)
			}
			if err := w.Serve(ctx); err == nil || ctx.Err() != nil {
				t.Fatalf("first serve: %v, want the failure", err)
			}
			serveUntilSynced(t, ctx, w, rec)
			got, synced := rec.snapshot()
			var s []string
			for _, e := range got {
				s = append(s, fmt.Sprintf("%s=%d", e.Key, e.Revision))
			}
			if fmt.Sprint(s) != tc.want || synced != 1 {
				t.Errorf("delivered %v and %d Synced, want %s then Synced once", s, synced, tc.want)
			}
		})
	}
}

// Changes made while the watch delivers the current values follow them,
// each once and in order, and Synced comes once.
func TestWatchChangesDuringCurrentValues(t *testing.T) {
	t.Parallel()
	ctx := ctxT(t)
	srv := natstest.RunServer(t)
	b, err := kv.Open("cfg", kv.Config{History: 10}, connection.NewFixed(natstest.Connect(t, srv.URL())), codec.JSON[int]{})
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"a", "b"} {
		if _, err := b.Put(ctx, k, 1); err != nil {
			t.Fatal(err)
		}
	}
	rec := newRecord()
	w, err := b.Watch("w", kv.WatchConfig{}, func(ctx context.Context, e kv.Entry[int]) error {
		if e.Revision == 1 {
			for _, k := range []string{"b", "b", "c"} {
				if _, err := b.Put(ctx, k, 2); err != nil {
					return err
				}
			}
		}
		return rec.fn(ctx, e)
	})
	if err != nil {
		t.Fatal(err)
	}
	sctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- w.Serve(sctx) }()
	rec.waitFor(t, "every revision and Synced", func(got []kv.Entry[int], s int) bool { return len(got) >= 5 && s > 0 })
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Errorf("serve: %v", err)
	}
	got, synced := rec.snapshot()
	var s []string
	for _, e := range got {
		s = append(s, fmt.Sprintf("%s=%d", e.Key, e.Revision))
	}
	if want := "[a=1 b=2 b=3 b=4 c=5]"; fmt.Sprint(s) != want || synced != 1 {
		t.Errorf("delivered %v and %d Synced, want %s and Synced once", s, synced, want)
	}
}
