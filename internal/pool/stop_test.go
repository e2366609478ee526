package pool_test

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/corral-go/corral/internal/pool"
)

func TestStopFinishesWhatIsQueued(t *testing.T) {
	t.Parallel()
	g := newGate()
	w := newWork(g.handle)
	p := pool.New[int](pool.Config{Workers: 1, QueueSize: 4}, w)
	p.Start()
	put(t, p, 1, 2, 3)
	g.waitEntered(t, 1)
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		p.Stop(time.Now().Add(10 * time.Second))
	}()
	close(g.open)
	<-stopped
	if got := p.Stats().Processed(); got != 3 || len(w.returnedItems()) != 0 {
		t.Fatalf("processed %d, returned %v: want all three handled", got, w.returnedItems())
	}
}

func TestStopAfterAbortReturnsWhatIsQueued(t *testing.T) {
	t.Parallel()
	g := newGate()
	w := newWork(g.handle)
	p := pool.New[int](pool.Config{Workers: 2, QueueSize: 8}, w)
	p.Start()
	put(t, p, 1, 2)
	g.waitEntered(t, 2) // 1 and 2 run
	put(t, p, 3, 4, 5)
	p.Abort()
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		p.Stop(time.Now().Add(10 * time.Second))
	}()
	// The queued ones come back while the running ones still run, and
	// those may finish within the deadline.
	w.wait(t, 3)
	if got := w.returnedItems(); !slices.Equal(got, []int{3, 4, 5}) {
		t.Fatalf("returned %v, want the queued 3, 4, 5", got)
	}
	close(g.open)
	<-stopped
	for _, item := range []int{1, 2} {
		if err, ok := w.settledErr(item); !ok || err != nil || p.CutOff(err) {
			t.Fatalf("item %d: settled %v with %v, want finished", item, ok, err)
		}
	}
}

func TestHardStopCancelsHandlers(t *testing.T) {
	t.Parallel()
	entered, release := make(chan int, 1), make(chan struct{})
	// The handler returns only once the test lets it, with its ctx's
	// error: the worker stays busy past the deadline.
	w := newWork(func(ctx context.Context, item int) error {
		entered <- item
		<-release
		return ctx.Err()
	})
	p := pool.New[int](pool.Config{Workers: 1, QueueSize: 1}, w)
	cutOff := make(chan bool, 1)
	w.settle = func(item int, err error) { cutOff <- p.CutOff(err) }
	done := p.AddInput()
	p.Start()
	put(t, p, 1)
	<-entered
	put(t, p, 2)
	// An input waiting for room when the deadline passes gives up, and
	// the stop waits for it to end.
	waiting := make(chan error, 1)
	go func() {
		err := p.Put(context.Background(), 3)
		done()
		waiting <- err
	}()

	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		p.Stop(time.Now().Add(100 * time.Millisecond))
	}()
	if err := <-waiting; !errors.Is(err, pool.ErrStopped) {
		t.Fatalf("Put at the deadline: got %v, want ErrStopped", err)
	}
	// What was queued comes back while the handler still runs.
	w.wait(t, 1)
	if got := w.returnedItems(); !slices.Equal(got, []int{2}) {
		t.Fatalf("returned %v, want the queued 2", got)
	}
	close(release)
	<-stopped
	if err, _ := w.settledErr(1); !errors.Is(err, context.Canceled) || !<-cutOff {
		t.Fatalf("the running item: settled with %v, want it cut off by the stop", err)
	}
	if p.CutOff(errors.New("failed")) {
		t.Fatal("CutOff holds for an error other than context.Canceled")
	}
	if p.Stats().Failed() != 1 {
		t.Fatalf("failed %d, want the one cut off", p.Stats().Failed())
	}
}

func TestUnstartedStopReturnsWhatIsQueued(t *testing.T) {
	t.Parallel()
	w := newWork(func(context.Context, int) error { return nil })
	p := pool.New[int](pool.Config{QueueSize: 2}, w)
	put(t, p, 1, 2)
	p.Stop(time.Now().Add(time.Second))
	if got := w.returnedItems(); !slices.Equal(got, []int{1, 2}) {
		t.Fatalf("returned %v, want 1 and 2", got)
	}
}

// A Cut in a stop's grace period ends it at once: the running handler's
// ctx is cancelled and the item counts as cut off, long before the
// deadline.
func TestCutEndsTheGraceAtOnce(t *testing.T) {
	t.Parallel()
	g := newGate()
	w := newWork(g.handle)
	p := pool.New[int](pool.Config{Workers: 1, QueueSize: 1}, w)
	cutOff := make(chan bool, 1)
	w.settle = func(item int, err error) { cutOff <- p.CutOff(err) }
	p.Start()
	put(t, p, 1)
	g.waitEntered(t, 1)
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		p.Stop(time.Now().Add(time.Hour))
	}()
	p.Cut()
	<-stopped
	if err, _ := w.settledErr(1); !errors.Is(err, context.Canceled) || !<-cutOff {
		t.Fatalf("the running item: settled with %v, want it cut off", err)
	}
}
