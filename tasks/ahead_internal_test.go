package tasks

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/corral-go/corral/internal/natstest"
)

// The pace counts the runs that ended in the current window and the one
// before: a worker whose runs stopped ending takes nothing ahead two
// windows later.
func TestPaceCountsTheLastWindow(t *testing.T) {
	var p pace
	start := time.Unix(0, 0).Add(1000 * paceWindow)
	if n := p.ahead(start); n != 0 {
		t.Fatalf("ahead before any run: %d, want 0", n)
	}
	for range 7 {
		p.ended(start)
	}
	next := start.Add(paceWindow)
	p.ended(next)
	for _, tt := range []struct {
		at   time.Time
		want int
	}{
		{next, 7},                     // the current window has one, the one before seven
		{next.Add(paceWindow), 1},     // the window before has one
		{next.Add(2 * paceWindow), 0}, // nothing ended since
	} {
		if n := p.ahead(tt.at); n != tt.want {
			t.Errorf("ahead at window %d: %d, want %d", tt.at.UnixNano()/int64(paceWindow), n, tt.want)
		}
	}
	// A window skipped counts nothing from before it.
	p.ended(next.Add(3 * paceWindow))
	if n := p.ahead(next.Add(3 * paceWindow)); n != 1 {
		t.Fatalf("ahead after a gap: %d, want 1", n)
	}
}

// A due list fires its entries in the order added, once each has waited
// its time; an entry removed first never fires, now fires one at once,
// and nothing fires after stop.
func TestDueListFiresInOrder(t *testing.T) {
	fired := make(chan int, 10)
	q := dueList[int]{after: 20 * time.Millisecond, fire: func(v int) { fired <- v }}
	entries := make([]dueEntry[int], 4)
	added := time.Now()
	for i := range entries {
		q.add(&entries[i], i, added)
	}
	if !q.remove(&entries[1]) || q.remove(&entries[1]) {
		t.Fatal("remove: want true once, then false")
	}
	q.now(&entries[3])
	var got []int
	for range 3 {
		got = append(got, <-fired)
	}
	if want := []int{3, 0, 2}; !slices.Equal(got, want) {
		t.Fatalf("fired %v, want %v", got, want)
	}
	if waited := time.Since(added); waited < q.after {
		t.Fatalf("entries fired after %v, before they were due (%v)", waited, q.after)
	}
	var late dueEntry[int]
	q.add(&late, 9, time.Now())
	q.stop()
	q.now(&late)
	q.expire()
	select {
	case v := <-fired:
		t.Fatalf("entry %d fired after stop", v)
	default:
	}
}

// Copies a worker took ahead of its slots and could not start, all its
// slots being taken by a long task, are given back to the queue once they
// waited a tenth of ClaimWait: another worker runs them, and the worker
// that took them never does.
func TestCopiesTakenAheadAreGivenBack(t *testing.T) {
	t.Parallel()
	srv := natstest.RunServer(t)
	cfg := fast
	cfg.MaxConcurrency, cfg.Prefetch = 1, 5
	var mu sync.Mutex
	ran := map[string][]string{} // worker → tasks
	started, release := make(chan struct{}), make(chan struct{})
	handler := func(who string) Handler {
		return HandlerFunc(func(ctx context.Context, task *Task) error {
			if task.ID() == "block" {
				close(started)
				select {
				case <-release:
				case <-ctx.Done():
				}
				return nil
			}
			mu.Lock()
			ran[who] = append(ran[who], task.ID())
			mu.Unlock()
			return nil
		})
	}
	publishTask(t, srv.URL(), "block")
	for i := range 5 {
		publishTask(t, srv.URL(), fmt.Sprintf("t%d", i))
	}
	var ahead atomic.Int32
	ahead.Store(5)
	a := serveWorkerWith(t, srv.URL(), cfg, handler("a"), func(w *Worker, _ *nats.Conn) {
		w.ahead = func() int { return int(ahead.Load()) }
	})
	<-started
	natstest.Eventually(t, 30*time.Second, func() bool { return a.w.Status().Held == 6 }, func() string {
		return fmt.Sprintf("a holds %d, want its running task and 5 taken ahead", a.w.Status().Held)
	})
	// No more ahead: what a worker whose runs stopped ending takes.
	ahead.Store(0)
	natstest.Eventually(t, 30*time.Second, func() bool {
		st := a.w.Status()
		return st.Held == 1 && st.Counters.PassedOver >= 5
	}, func() string { return fmt.Sprintf("a: %+v, want the copies taken ahead given back", a.w.Status()) })
	b := serveWorker(t, srv.URL(), cfg, handler("b"), nil)
	natstest.Eventually(t, 30*time.Second, func() bool { return b.w.Status().Counters.Completed == 5 }, func() string {
		return fmt.Sprintf("b: %+v", b.w.Status())
	})
	close(release)
	a.stop()
	b.stop()
	mu.Lock()
	defer mu.Unlock()
	if len(ran["a"]) != 0 || len(ran["b"]) != 5 {
		t.Fatalf("runs: a %v, b %v; want b's alone", ran["a"], ran["b"])
	}
}
