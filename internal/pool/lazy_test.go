package pool_test

import (
	"context"
	"errors"
	"regexp"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"github.com/corral-go/corral/internal/pool"
	"github.com/corral-go/corral/supervisor"
)

// A started pool that nothing was put in runs no goroutine and holds no
// queue; its workers start at the first put, and a stop ends them. (Not
// parallel: it counts the pool workers' goroutines in the process, and
// waits for those of the tests before it to have exited.)
func TestWorkersStartAtTheFirstPut(t *testing.T) {
	const pools, workers = 50, 4
	waitWorkers(t, 0)
	w := newWork(func(context.Context, int) error { return nil })
	ps := make([]*pool.Pool[int], pools)
	for i := range ps {
		ps[i] = pool.New[int](pool.Config{Workers: workers, QueueSize: 8}, w)
		ps[i].Start()
	}
	if n := poolWorkers(); n > 0 {
		t.Fatalf("%d idle pools run %d workers, want none", pools, n)
	}
	if n := ps[0].Len(); n != 0 {
		t.Fatalf("Len of an idle pool: %d", n)
	}
	done := ps[0].AddInput()
	if !ps[0].TryPut(1) {
		t.Fatal("the first put found no room")
	}
	done()
	if got := <-w.done; got != 1 {
		t.Fatalf("handled %d, want 1", got)
	}
	if n := poolWorkers(); n != workers {
		t.Fatalf("after one put: %d workers, want %d", n, workers)
	}
	for _, p := range ps {
		p.Stop(time.Now().Add(time.Second))
	}
	if err, _ := w.settledErr(1); err != nil {
		t.Fatalf("item 1: %v", err)
	}
	waitWorkers(t, 0)
}

// workerCreated is the line a goroutine dump gives every worker, started
// or not yet: a goroutine not yet run shows no frame of its function.
var workerCreated = regexp.MustCompile(`created by \S*internal/pool\.\(\*Pool\[[^\]]*\]\)\.spawnLocked`)

// poolWorkers counts the pools' worker goroutines in the process.
func poolWorkers() int {
	buf := make([]byte, 1<<20)
	for {
		n := runtime.Stack(buf, true)
		if n < len(buf) {
			return len(workerCreated.FindAll(buf[:n], -1))
		}
		buf = make([]byte, 2*len(buf))
	}
}

// waitWorkers waits until n workers run: Stop returns once every worker
// is done, and each goroutine exits just after.
func waitWorkers(t *testing.T, n int) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for poolWorkers() != n {
		if time.Now().After(deadline) {
			t.Fatalf("%d pool workers run, want %d", poolWorkers(), n)
		}
		runtime.Gosched()
	}
}

// Run handles an item on the caller's goroutine, one at a time however
// many call, with the pool's timeout and panic recovery; once the stop
// has cut the pool off, it returns items instead of running them.
func TestRunHandlesOnTheCallersGoroutine(t *testing.T) {
	t.Parallel()
	var inside, most atomic.Int32
	w := newWork(func(ctx context.Context, item int) error {
		n := inside.Add(1)
		defer inside.Add(-1)
		for m := most.Load(); n > m && !most.CompareAndSwap(m, n); m = most.Load() {
		}
		switch item {
		case 0:
			panic("boom")
		case 1:
			<-ctx.Done() // the timeout
			return ctx.Err()
		}
		for range 100 { // room for the other callers to overlap
			runtime.Gosched()
		}
		return nil
	})
	p := pool.New[int](pool.Config{Workers: 1, QueueSize: 4, Timeout: 50 * time.Millisecond}, w)
	p.Start()
	inputs := make(chan struct{})
	for c := range 4 {
		done := p.AddInput()
		go func() {
			defer done()
			for i := range 5 {
				p.Run(2 + c*5 + i)
			}
			inputs <- struct{}{}
		}()
	}
	p.Run(0)
	p.Run(1)
	for range 4 {
		<-inputs
	}
	if m := most.Load(); m != 1 {
		t.Fatalf("%d items ran at once, want 1", m)
	}
	if err, _ := w.settledErr(0); !errors.As(err, new(*supervisor.PanicError)) {
		t.Fatalf("item 0: got %v, want a PanicError", err)
	}
	if err, _ := w.settledErr(1); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("item 1: got %v, want its timeout", err)
	}
	if n := p.Stats().Handled(); n != 22 {
		t.Fatalf("handled %d, want 22", n)
	}
	p.Cut()
	p.Run(99)
	if got := w.returnedItems(); len(got) != 1 || got[0] != 99 {
		t.Fatalf("returned %v after the cut, want [99]", got)
	}
	p.Stop(time.Now())
}
