package pool_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/corral-go/corral/internal/natstest"
	"github.com/corral-go/corral/internal/pool"
	"github.com/corral-go/corral/supervisor"
)

// work is a Work[int] that runs handle and records what the pool did with
// each item.
type work struct {
	handle func(ctx context.Context, item int) error
	settle func(item int, err error) // nil: records only

	mu       sync.Mutex
	settled  map[int]error
	returned []int
	reports  []report
	done     chan int // each item settled or returned, if set
}

type report struct {
	item       int
	err        *supervisor.PanicError
	suppressed uint64
}

func newWork(handle func(ctx context.Context, item int) error) *work {
	return &work{handle: handle, settled: map[int]error{}, done: make(chan int, 1000)}
}

func (w *work) Handle(ctx context.Context, item int) error { return w.handle(ctx, item) }

func (w *work) Settle(_ context.Context, item int, err error) {
	w.mu.Lock()
	w.settled[item] = err
	w.mu.Unlock()
	w.done <- item
	if w.settle != nil {
		w.settle(item, err)
	}
}

func (w *work) Return(item int) {
	w.mu.Lock()
	w.returned = append(w.returned, item)
	w.mu.Unlock()
	w.done <- item
}

func (w *work) ReportPanic(item int, err *supervisor.PanicError, suppressed uint64) {
	w.mu.Lock()
	w.reports = append(w.reports, report{item, err, suppressed})
	w.mu.Unlock()
}

func (w *work) returnedItems() []int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return slices.Sorted(slices.Values(w.returned))
}

func (w *work) settledErr(item int) (error, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	err, ok := w.settled[item]
	return err, ok
}

// wait waits for n items to be settled or returned.
func (w *work) wait(t *testing.T, n int) {
	t.Helper()
	for range n {
		select {
		case <-w.done:
		case <-time.After(10 * time.Second):
			t.Fatal("an item was neither settled nor returned")
		}
	}
}

// gate blocks handlers until it is opened; entered receives each item as
// its handler starts.
type gate struct {
	open    chan struct{}
	entered chan int
}

func newGate() *gate { return &gate{open: make(chan struct{}), entered: make(chan int, 100)} }

func (g *gate) handle(ctx context.Context, item int) error {
	g.entered <- item
	select {
	case <-g.open:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (g *gate) waitEntered(t *testing.T, n int) {
	t.Helper()
	for range n {
		select {
		case <-g.entered:
		case <-time.After(10 * time.Second):
			t.Fatal("a handler never started")
		}
	}
}

// put puts items with TryPut, failing the test if one finds no room.
func put[T any](t *testing.T, p *pool.Pool[T], items ...T) {
	t.Helper()
	for _, item := range items {
		if !p.TryPut(item) {
			t.Fatalf("no room for %v", item)
		}
	}
}

func TestFullQueue(t *testing.T) {
	t.Parallel()
	g := newGate()
	w := newWork(g.handle)
	p := pool.New[int](pool.Config{Workers: 1, QueueSize: 2}, w)
	done := p.AddInput()
	p.Start()
	put(t, p, 1)
	g.waitEntered(t, 1) // the worker holds 1
	put(t, p, 2, 3)
	if p.TryPut(4) {
		t.Fatal("TryPut found room in a full queue")
	}
	if p.Len() != 2 || p.Cap() != 2 {
		t.Fatalf("len %d, cap %d: want 2 and 2", p.Len(), p.Cap())
	}
	// Drop-oldest: the oldest queued makes room.
	if item, ok := p.Evict(); !ok || item != 2 {
		t.Fatalf("evicted %d %v, want 2", item, ok)
	}
	put(t, p, 4)

	// A waiting Put gives up when its ctx ends...
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if err := p.Put(ctx, 5); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Put on a full queue: got %v, want its ctx's error", err)
	}
	// ...and finds room once a worker takes the next item.
	put5 := make(chan error, 1)
	go func() { put5 <- p.Put(context.Background(), 5) }()
	close(g.open)
	if err := <-put5; err != nil {
		t.Fatalf("Put: %v", err)
	}
	done()
	p.Stop(time.Now().Add(10 * time.Second))
	for _, item := range []int{1, 3, 4, 5} {
		if err, ok := w.settledErr(item); !ok || err != nil {
			t.Fatalf("item %d: settled %v with %v, want handled", item, ok, err)
		}
	}
	if s := p.Stats(); s.Processed() != 4 || s.Failed() != 0 || s.InFlight() != 0 || s.Latency().Count == 0 {
		t.Fatalf("stats: processed %d, failed %d, in flight %d, latency %+v", s.Processed(), s.Failed(), s.InFlight(), s.Latency())
	}
}

func TestTimeoutEndsHandlersCtx(t *testing.T) {
	t.Parallel()
	w := newWork(func(ctx context.Context, _ int) error {
		if _, ok := ctx.Deadline(); !ok {
			return errors.New("no deadline")
		}
		<-ctx.Done()
		return ctx.Err()
	})
	p := pool.New[int](pool.Config{Workers: 1, QueueSize: 1, Timeout: 20 * time.Millisecond}, w)
	p.Start()
	put(t, p, 1)
	w.wait(t, 1)
	p.Stop(time.Now().Add(time.Second))
	if err, _ := w.settledErr(1); !errors.Is(err, context.DeadlineExceeded) || p.CutOff(err) {
		t.Fatalf("settled with %v, want its timeout, not a cut-off", err)
	}
	if l := p.Stats().Latency(); l.Count != 1 || l.Max < 20*time.Millisecond {
		t.Fatalf("latency %+v, want one call cut at 20ms", l)
	}
}

func TestPanicsAreRecoveredAndCounted(t *testing.T) {
	t.Parallel()
	const n = 100
	w := newWork(func(ctx context.Context, item int) error {
		if item%2 == 0 {
			panic("handler bug " + strconv.Itoa(item))
		}
		return nil
	})
	// Settling the odd ones panics too.
	var finishedOdd sync.WaitGroup
	w.settle = func(item int, err error) {
		if item%2 == 1 {
			defer finishedOdd.Done()
			panic("settle bug")
		}
	}
	finishedOdd.Add(n / 2)
	stats := &pool.Stats{}
	p := pool.New[int](pool.Config{Workers: 4, QueueSize: n, Stats: stats}, w)
	began := time.Now()
	p.Start()
	for i := range n {
		put(t, p, i)
	}
	w.wait(t, n)
	finishedOdd.Wait()
	p.Stop(time.Now().Add(time.Second))

	if stats.Panicked() != n || stats.Failed() != n/2 || stats.Processed() != n/2 {
		t.Fatalf("panicked %d, failed %d, processed %d: want %d, %d, %d",
			stats.Panicked(), stats.Failed(), stats.Processed(), n, n/2, n/2)
	}
	for i := 0; i < n; i += 2 {
		err, _ := w.settledErr(i)
		var pe *supervisor.PanicError
		if !errors.As(err, &pe) || pe.Value != fmt.Sprint("handler bug ", i) || len(pe.Stack) == 0 {
			t.Fatalf("item %d settled with %v, want its panic with the stack", i, err)
		}
	}
	// At most one report a second, each standing for the panics since the
	// one before.
	w.mu.Lock()
	defer w.mu.Unlock()
	if limit := 1 + int(time.Since(began)/time.Second); len(w.reports) == 0 || len(w.reports) > limit {
		t.Fatalf("%d reports in %v, want between 1 and %d", len(w.reports), time.Since(began), limit)
	}
	var reported uint64
	for _, r := range w.reports {
		reported += 1 + r.suppressed
	}
	if reported > n {
		t.Fatalf("reports stand for %d panics, more than the %d there were", reported, n)
	}
}

func TestInputsGateTheClose(t *testing.T) {
	t.Parallel()
	srv := natstest.RunServer(t, natstest.WithoutJetStream())
	nc, err := nats.Connect(srv.URL())
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()

	g := newGate()
	w := newWork(g.handle)
	p := pool.New[int](pool.Config{Workers: 1, QueueSize: 1}, w)
	p.Start()
	// The callback waits for room: the subscription buffers what the
	// pool cannot take yet.
	sub, err := nc.Subscribe("in", func(m *nats.Msg) {
		n, _ := strconv.Atoi(string(m.Data))
		_ = p.Put(context.Background(), n)
	})
	if err != nil {
		t.Fatal(err)
	}
	ended := p.Feed(sub)
	other := p.AddInput()
	const n = 20
	for i := range n {
		if err := nc.Publish("in", []byte(strconv.Itoa(i))); err != nil {
			t.Fatal(err)
		}
	}
	if err := nc.Flush(); err != nil {
		t.Fatal(err)
	}
	g.waitEntered(t, 1)

	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		p.Stop(time.Now().Add(20 * time.Second))
	}()
	if err := sub.Drain(); err != nil {
		t.Fatal(err)
	}
	close(g.open)
	select {
	case <-ended:
	case <-time.After(10 * time.Second):
		t.Fatal("the drained subscription's input never ended")
	}
	// The other input has not ended: the queue stays open for it (a put
	// on a closed queue would panic).
	select {
	case <-stopped:
		t.Fatal("Stop returned while an input was open")
	default:
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := p.Put(ctx, n); err != nil {
		t.Fatalf("the open input's Put: %v", err)
	}
	other()
	<-stopped
	if got := p.Stats().Processed(); got != n+1 || len(w.returnedItems()) != 0 {
		t.Fatalf("processed %d, returned %v: want all %d handled", got, w.returnedItems(), n+1)
	}
}

// TestLongRunningItemsAtStop runs items the way long-running tasks use the
// pool: a worker per task held at once, no timeout; at stop the queued
// tasks go back, and the running ones have until the deadline, then their
// ctx ends and they are told apart from failures.
func TestLongRunningItemsAtStop(t *testing.T) {
	t.Parallel()
	const running, queued = 3, 5
	entered := make(chan int, running)
	cancelled := make(chan time.Time, running)
	w := newWork(func(ctx context.Context, item int) error {
		entered <- item
		<-ctx.Done()
		cancelled <- time.Now()
		return ctx.Err()
	})
	p := pool.New[int](pool.Config{Workers: running, QueueSize: queued}, w)
	cutOff := make(chan bool, running)
	w.settle = func(_ int, err error) { cutOff <- p.CutOff(err) }
	p.Start()
	for i := range running {
		put(t, p, i)
	}
	for range running {
		<-entered
	}
	for i := range queued {
		put(t, p, running+i)
	}
	p.Abort()
	deadline := time.Now().Add(200 * time.Millisecond)
	p.Stop(deadline)

	want := []int{3, 4, 5, 6, 7}
	if got := w.returnedItems(); !slices.Equal(got, want) {
		t.Fatalf("returned %v, want the queued %v", got, want)
	}
	for i := range running {
		if at := <-cancelled; at.Before(deadline) {
			t.Fatalf("a running item was cancelled %v before the deadline", deadline.Sub(at))
		}
		if err, _ := w.settledErr(i); !errors.Is(err, context.Canceled) || !<-cutOff {
			t.Fatalf("running item %d settled with %v, want it cut off", i, err)
		}
	}
}

// The latency count estimates the calls, whatever mix of fast calls
// (timed one in eight) and slow ones (timed every time) the pool ran.
func TestLatencyCountEstimatesTheCalls(t *testing.T) {
	t.Parallel()
	const fast, slow = 800, 40
	w := newWork(func(_ context.Context, item int) error {
		if item >= fast {
			time.Sleep(100 * time.Microsecond) // the work itself: a slow call
		}
		return nil
	})
	p := pool.New[int](pool.Config{Workers: 1, QueueSize: 16}, w)
	p.Start()
	for i := range fast + slow {
		if err := p.Put(context.Background(), i); err != nil {
			t.Fatal(err)
		}
	}
	w.wait(t, fast+slow)
	p.Stop(time.Now().Add(10 * time.Second))
	// Counted at each sample for the calls until the next, so within a
	// sample's weight (eight) of the calls made.
	if l := p.Stats().Latency(); l.Count < fast+slow-8 || l.Count > fast+slow+8 {
		t.Fatalf("latency count %d after %d calls", l.Count, fast+slow)
	}
}
