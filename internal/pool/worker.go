package pool

import (
	"context"
	"runtime/debug"
	"time"

	"github.com/corral-go/corral/supervisor"
)

// panicReportInterval rate-limits ReportPanic, and ReportFailure.
const panicReportInterval = time.Second

// Reading the clock costs more than a trivial handler on some machines,
// so handlers faster than sampleAbove are timed one item in sampleEvery
// (the first, the ninth, ...); slower ones always.
const (
	sampleEvery = 8
	sampleAbove = 20 * time.Microsecond
)

// sampler is a worker's latency sampling state.
type sampler struct {
	n    uint
	slow bool
}

func (p *Pool[T]) worker() {
	defer p.running.Done()
	// A ctx of the worker's own: handlers that derive one per item (a
	// task's, to cancel it alone) register with it, not all with base,
	// whose lock and list of children the workers would share.
	ctx, cancel := context.WithCancel(p.base)
	defer cancel()
	var s sampler
	for item := range p.queue {
		if p.aborted.Load() {
			p.work.Return(item)
			continue
		}
		p.run(ctx, &s, item)
	}
}

// Run handles and settles item on the caller's goroutine, as a worker
// would, for an input that is the pool's only worker: a subscription
// whose delivery goroutine runs its handler, with nothing queued between
// them. Calls are serialized, so that at most one item runs however many
// inputs call; once the stop has aborted the pool, item goes to
// Work.Return instead. Run is for pools of one worker that nothing puts
// to. It returns how many items Run has taken, this one included, and
// whether Handle is slow: its last timed call took over 20µs, so that it
// is now timed at every call (see Stats.Latency) and a check per item
// costs the caller little beside it.
func (p *Pool[T]) Run(item T) (n uint, slow bool) {
	p.direct.Lock()
	defer p.direct.Unlock()
	if p.aborted.Load() {
		p.directSampler.n++
		p.work.Return(item)
		return p.directSampler.n, p.directSampler.slow
	}
	p.run(p.base, &p.directSampler, item)
	return p.directSampler.n, p.directSampler.slow
}

// run handles and settles one item: timeout, panic recovery, counts and
// latency. It is counted once settled, so that a reply or an ack has gone
// out when the counts say the item was handled.
func (p *Pool[T]) run(base context.Context, s *sampler, item T) {
	p.stats.inFlight.Add(1)
	s.n++
	// The clock starts before the timeout's does, so that a call cut by
	// the timeout never measures shorter than it.
	var start time.Time
	sampled := s.slow || s.n%sampleEvery == 1
	if sampled {
		start = time.Now()
	}
	ctx, cancel := base, context.CancelFunc(nil)
	if p.timeout > 0 {
		ctx, cancel = context.WithTimeout(base, p.timeout)
	}
	err := p.handle(ctx, item)
	if sampled {
		d := time.Since(start)
		s.slow = d > sampleAbove
		// The sample stands for the calls until the next: the next one
		// after a slow call, else the next one in sampleEvery.
		weight := uint64(1)
		if !s.slow {
			weight = uint64((sampleEvery-(s.n-1)%sampleEvery-1)%sampleEvery + 1)
		}
		p.stats.latency.record(d, weight)
	}
	p.settle(ctx, item, err)
	if cancel != nil {
		cancel()
	}
	p.stats.inFlight.Add(-1)
	if err == nil {
		p.stats.processed.Add(1)
	} else {
		p.stats.failed.Add(1)
		p.failed(item, err)
	}
}

// failed reports err, which Handle returned for item, to a
// FailureReporter: at most one a second, the others counted for the next.
// A panic was reported when it was recovered.
func (p *Pool[T]) failed(item T, err error) {
	if _, panicked := err.(*supervisor.PanicError); panicked || p.failures == nil {
		return
	}
	now, last := time.Now().UnixNano(), p.failedAt.Load()
	if now-last < int64(panicReportInterval) || !p.failedAt.CompareAndSwap(last, now) {
		p.unreportedFailures.Add(1)
		return
	}
	p.failures.ReportFailure(item, err, p.unreportedFailures.Swap(0))
}

func (p *Pool[T]) handle(ctx context.Context, item T) (err error) {
	defer func() {
		if v := recover(); v != nil {
			err = p.recovered(item, v)
		}
	}()
	return p.work.Handle(ctx, item)
}

func (p *Pool[T]) settle(ctx context.Context, item T, err error) {
	defer func() {
		if v := recover(); v != nil {
			p.recovered(item, v)
		}
	}()
	p.work.Settle(ctx, item, err)
}

// recovered counts and reports the panic v, recovered from item's Handle
// or Settle. It runs in the deferred function, so the stack is the
// panic's.
func (p *Pool[T]) recovered(item T, v any) *supervisor.PanicError {
	pe := &supervisor.PanicError{Value: v, Stack: debug.Stack()}
	p.stats.panicked.Add(1)
	p.panicMu.Lock()
	now := time.Now()
	if now.Sub(p.reportedAt) < panicReportInterval {
		p.unreported++
		p.panicMu.Unlock()
		return pe
	}
	suppressed := p.unreported
	p.reportedAt, p.unreported = now, 0
	p.panicMu.Unlock()
	p.work.ReportPanic(item, pe, suppressed)
	return pe
}
