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
	"github.com/nats-io/nats.go/jetstream"

	"github.com/corral-go/corral/internal/natstest"
)

// The pace counts the runs that ended in the current window and the one
// before: a worker whose runs stopped ending takes nothing ahead two
// windows later. A run counted late, by a goroutine that read the clock
// before the window moved on, counts in the window before.
func TestPaceCountsTheLastWindow(t *testing.T) {
	var p pace
	start := paceEpoch.Add(1000 * paceWindow)
	if n := p.ahead(start); n != 0 {
		t.Fatalf("ahead before any run: %d, want 0", n)
	}
	for range 7 {
		p.ended(start)
	}
	next := start.Add(paceWindow)
	p.ended(next)
	p.ended(start) // late: counts with the window before
	for _, tt := range []struct {
		at   time.Time
		want int
	}{
		{start, 8},                    // read late: as the current window
		{next, 8},                     // the current window has one, the one before eight
		{next.Add(paceWindow), 1},     // the window before has one
		{next.Add(2 * paceWindow), 0}, // nothing ended since
	} {
		if n := p.ahead(tt.at); n != tt.want {
			t.Errorf("ahead at window %d: %d, want %d", paceIndex(tt.at), n, tt.want)
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
	entries := make([]dueEntry[int], 4)
	fired := make(chan int, len(entries)) // every entry fires at most once
	q := dueList[int]{after: 20 * time.Millisecond, fire: func(v int) { fired <- v }}
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
	q.add(&late, 9, time.Now().Add(-time.Hour)) // due long ago
	q.stop()
	// The timer, were it to fire late, and now, fire nothing.
	q.expire()
	q.now(&late)
	if q.armed || len(fired) != 0 {
		t.Fatalf("after stop: armed %v, %d fired", q.armed, len(fired))
	}
}

// A worker whose tasks end quickly takes tasks ahead of its free slots:
// it holds more than its slots at once.
func TestQuickTasksAreTakenAhead(t *testing.T) {
	t.Parallel()
	srv := natstest.RunServer(t)
	cfg := fast
	cfg.MaxConcurrency, cfg.ClaimAfter = 2, 500*time.Millisecond
	const n = 2000
	publishTask(t, srv.URL(), "first") // declares the queue's stream
	js, _ := jetstream.New(natstest.Connect(t, srv.URL()))
	for i := range n - 1 {
		if _, err := js.PublishAsync("corral.tasks.q", []byte{byte(i)}); err != nil {
			t.Fatal(err)
		}
	}
	<-js.PublishAsyncComplete()
	a := serveWorker(t, srv.URL(), cfg, HandlerFunc(func(context.Context, *Task) error { return nil }), nil)
	natstest.Eventually(t, 60*time.Second, func() bool { return a.w.Status().Counters.Completed == n }, func() string {
		return fmt.Sprintf("a: %+v", a.w.Status())
	})
	if peak := a.w.current.Load().peakHeld.Load(); peak <= int64(cfg.MaxConcurrency) {
		t.Fatalf("held at most %d at once, with %d slots: nothing was taken ahead", peak, cfg.MaxConcurrency)
	}
}

// Copies a worker took ahead of its slots and could not start, all its
// slots being taken by a long task, are given back to the queue once they
// waited a tenth of ClaimWait: another worker runs them, and the worker
// that took them never does, not even once its slot is free again.
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
	// Five ahead, whatever the pace: what a worker whose tasks had ended
	// quickly until then takes.
	a := serveWorkerWith(t, srv.URL(), cfg, handler("a"), func(w *Worker, _ *nats.Conn) {
		w.ahead = func() int { return 5 }
	})
	<-started
	// The copies given back stay in the slot's queue until it frees, and
	// the puller counts them held till then: it takes no more meanwhile.
	natstest.Eventually(t, 30*time.Second, func() bool {
		st := a.w.Status()
		return st.Held == 1 && st.Counters.PassedOver == 5
	}, func() string { return fmt.Sprintf("a: %+v, want the five copies taken ahead given back", a.w.Status()) })
	b := serveWorker(t, srv.URL(), cfg, handler("b"), nil)
	natstest.Eventually(t, 30*time.Second, func() bool { return b.w.Status().Counters.Completed == 5 }, func() string {
		return fmt.Sprintf("b: %+v", b.w.Status())
	})
	// The slot frees and lets go of the copies given back, without
	// running them.
	close(release)
	r := a.w.current.Load()
	natstest.Eventually(t, 30*time.Second, func() bool { return r.puller.Held() == 0 && r.ahead.givenBack.Load() == 0 },
		func() string {
			return fmt.Sprintf("a holds %d, %d of them given back", r.puller.Held(), r.ahead.givenBack.Load())
		})
	a.stop()
	b.stop()
	mu.Lock()
	defer mu.Unlock()
	if len(ran["a"]) != 0 || len(ran["b"]) != 5 || a.w.Status().Counters.PassedOver != 5 {
		t.Fatalf("runs: a %v, b %v, a passed over %d; want b's alone, and five passed over",
			ran["a"], ran["b"], a.w.Status().Counters.PassedOver)
	}
}

// A worker that dies holding copies it took ahead, its only slot busy,
// loses nothing: the copies come back after ClaimWait and the task it ran
// is put back once its lease expires; another worker completes each once.
func TestCrashHoldingCopiesTakenAheadLosesNoTask(t *testing.T) {
	t.Parallel()
	srv := natstest.RunServer(t)
	cfg := fast
	cfg.MaxConcurrency = 1
	block := HandlerFunc(func(ctx context.Context, task *Task) error {
		<-ctx.Done()
		return ctx.Err()
	})
	publishTask(t, srv.URL(), "block")
	for i := range 3 {
		publishTask(t, srv.URL(), fmt.Sprintf("t%d", i))
	}
	died := make(chan struct{})
	serveWorkerWith(t, srv.URL(), cfg, block, func(w *Worker, nc *nats.Conn) {
		w.ahead = func() int { return 3 }
		var taken atomic.Int32
		w.crash = func(step string) bool {
			// The first copy goes to the free slot; the second is taken
			// ahead, behind the running task.
			if step != stepTaken || taken.Add(1) != 2 {
				return false
			}
			nc.Close()
			close(died)
			return true
		}
	})
	select {
	case <-died:
	case <-time.After(30 * time.Second):
		t.Fatal("the worker never took a copy ahead")
	}
	b := serveWorker(t, srv.URL(), cfg, HandlerFunc(func(context.Context, *Task) error { return nil }), nil)
	natstest.Eventually(t, 30*time.Second, func() bool { return b.w.Status().Counters.Completed == 4 }, func() string {
		return fmt.Sprintf("b: %+v", b.w.Status())
	})
	b.stop()
	done, held := outcomes(t, srv.URL())
	for _, id := range []string{"block", "t0", "t1", "t2"} {
		if len(done[id]) != 1 {
			t.Errorf("recorded completions of %s: %v, want one", id, done[id])
		}
	}
	if len(held) != 0 {
		t.Errorf("still held: %v", held)
	}
}
