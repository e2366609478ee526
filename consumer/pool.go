package consumer

import (
	"context"
	"runtime/debug"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/corral-go/corral/supervisor"
)

const (
	// quietPeriod is how long a slow-consumer episode must go without an
	// overflow before it ends; it also rate-limits episodes to one start
	// and one end log line per period.
	quietPeriod = time.Second
	// episodeTick is how often an active episode is checked for its end.
	episodeTick = 100 * time.Millisecond
	// panicEventInterval rate-limits HandlerPanicked events.
	panicEventInterval = time.Second
)

// invoker runs the handler for one message: a plain handler, or a request
// handler and its reply.
type invoker func(ctx context.Context, m *Msg) error

// pool is one handler's bounded task queue and its fixed set of workers,
// for one run of the handler's Serve. The subscription feeds it through
// enqueue; stop drains it.
type pool struct {
	name    string
	subject string
	cfg     Config
	events  *supervisor.Events
	stats   *counters
	invoke  invoker

	queue chan *Msg
	// base is the ctx handlers get; cancelled when the grace period of a
	// stop runs out.
	base   context.Context
	cancel context.CancelFunc
	abort  atomic.Bool
	wg     sync.WaitGroup
	// skipped counts messages workers took from the queue but did not
	// handle because the stop's grace period had run out.
	skipped atomic.Uint64

	// Input side: callbacks in progress, and whether input is closed.
	callbacks atomic.Int64
	closing   chan struct{}

	// Slow-consumer episode, and the counts when it started.
	episodeActive atomic.Bool
	episodeStart  atomic.Pointer[episodeStart]
	lastOverflow  atomic.Int64 // unix nanoseconds
	episodeWake   chan struct{}
	monitorStop   chan struct{}
	monitorDone   chan struct{}
	sub           atomic.Pointer[nats.Subscription]

	// Panic events.
	panicMu       sync.Mutex
	lastPanicAt   time.Time
	panicsSkipped uint64
}

func newPool(name string, cfg Config, events *supervisor.Events, stats *counters, invoke invoker) *pool {
	base, cancel := context.WithCancel(context.Background())
	return &pool{
		name: name, subject: cfg.Subject, cfg: cfg, events: events, stats: stats, invoke: invoke,
		queue:       make(chan *Msg, cfg.QueueSize),
		base:        base,
		cancel:      cancel,
		closing:     make(chan struct{}),
		episodeWake: make(chan struct{}, 1),
		monitorStop: make(chan struct{}),
		monitorDone: make(chan struct{}),
	}
}

// start runs the workers and the episode monitor.
func (p *pool) start() {
	p.wg.Add(p.cfg.Workers)
	for range p.cfg.Workers {
		go p.work()
	}
	go p.monitor()
}

func (p *pool) work() {
	defer p.wg.Done()
	var w worker
	for {
		m := <-p.queue
		if m == nil || p.abort.Load() {
			if m != nil {
				p.skipped.Add(1)
			}
			return
		}
		p.run(&w, m)
	}
}

// worker is a worker's latency sampling state. Reading the clock costs
// more than a trivial handler on some machines, so handlers faster than
// sampleAbove are timed one message in sampleEvery; slower ones always.
type worker struct {
	n    uint
	slow bool
}

const (
	sampleEvery = 8
	sampleAbove = 20 * time.Microsecond
)

// run handles one message: timeout, panic recovery, counts and latency.
func (p *pool) run(w *worker, m *Msg) {
	p.stats.inFlight.Add(1)
	ctx, cancel := p.base, context.CancelFunc(nil)
	if p.cfg.Timeout > 0 {
		ctx, cancel = context.WithTimeout(p.base, p.cfg.Timeout)
	}
	w.n++
	var err error
	if w.slow || w.n%sampleEvery == 0 {
		start := time.Now()
		err = p.call(ctx, m)
		d := time.Since(start)
		w.slow = d > sampleAbove
		p.stats.latency.record(d)
	} else {
		err = p.call(ctx, m)
	}
	if cancel != nil {
		cancel()
	}
	p.stats.inFlight.Add(-1)
	if err == nil {
		p.stats.processed.Add(1)
	} else {
		p.stats.failed.Add(1)
	}
}

func (p *pool) call(ctx context.Context, m *Msg) (err error) {
	defer func() {
		if r := recover(); r != nil {
			pe := &supervisor.PanicError{Value: r, Stack: debug.Stack()}
			p.stats.panicked.Add(1)
			p.panicked(m, pe)
			err = pe
		}
	}()
	return p.invoke(ctx, m)
}

// panicked emits a HandlerPanicked event, at most one per interval.
func (p *pool) panicked(m *Msg, pe *supervisor.PanicError) {
	p.panicMu.Lock()
	now := time.Now()
	if now.Sub(p.lastPanicAt) < panicEventInterval {
		p.panicsSkipped++
		p.panicMu.Unlock()
		return
	}
	skipped := p.panicsSkipped
	p.lastPanicAt, p.panicsSkipped = now, 0
	p.panicMu.Unlock()
	p.events.Emit(HandlerPanicked{EventTime: p.events.Now(), Handler: p.name, Subject: m.Subject(), Err: pe, Suppressed: skipped})
}

// enqueue is the subscription callback: it hands the message to the
// queue, applying the overflow policy when the queue is full.
func (p *pool) enqueue(raw *nats.Msg) {
	p.callbacks.Add(1)
	defer p.callbacks.Add(-1)
	m := &Msg{raw: raw, handler: p.name}
	p.stats.received.Add(1)
	select {
	case p.queue <- m:
		return
	default:
	}
	p.overflow()
	switch p.cfg.Overflow {
	case Block:
		select {
		case p.queue <- m:
		case <-p.closing:
			p.stats.dropped.Add(1)
		}
	case DropNewest:
		p.stats.dropped.Add(1)
	case DropOldest:
		for {
			select {
			case old := <-p.queue:
				if old != nil {
					p.stats.dropped.Add(1)
				}
			default:
			}
			select {
			case p.queue <- m:
				return
			default:
			}
		}
	case Reject:
		p.stats.rejected.Add(1)
		respondError(raw, &ServiceError{Code: 503, Description: "busy: handler queue is full"})
	}
}

// overflow records that the queue was full, starting an episode if none
// is active.
func (p *pool) overflow() {
	p.lastOverflow.Store(time.Now().UnixNano())
	if p.episodeActive.CompareAndSwap(false, true) {
		p.episodeStart.Store(&episodeStart{at: time.Now(), dropped: p.dropped(), rejected: p.stats.rejected.Load()})
		p.events.Emit(SlowConsumerStarted{EventTime: p.events.Now(), Handler: p.name, Subject: p.subject,
			QueueSize: p.cfg.QueueSize, Overflow: p.cfg.Overflow})
		select {
		case p.episodeWake <- struct{}{}:
		default:
		}
	}
}

// monitor ends slow-consumer episodes once the queue has been below half
// for a quiet period, and counts what nats.go dropped meanwhile. It only
// ticks during an episode.
func (p *pool) monitor() {
	defer close(p.monitorDone)
	for {
		select {
		case <-p.monitorStop:
			return
		case <-p.episodeWake:
		}
		t := time.NewTicker(episodeTick)
		for ended := false; !ended; {
			select {
			case <-p.monitorStop:
				t.Stop()
				p.endEpisode()
				return
			case <-t.C:
				quiet := time.Since(time.Unix(0, p.lastOverflow.Load())) >= quietPeriod
				if quiet && len(p.queue) <= cap(p.queue)/2 {
					t.Stop()
					p.endEpisode()
					ended = true
				}
			}
		}
	}
}

type episodeStart struct {
	at                time.Time
	dropped, rejected uint64
}

func (p *pool) endEpisode() {
	start := p.episodeStart.Load()
	p.episodeActive.Store(false)
	p.events.Emit(SlowConsumerEnded{EventTime: p.events.Now(), Handler: p.name, Subject: p.subject,
		Dropped: p.dropped() - start.dropped, Rejected: p.stats.rejected.Load() - start.rejected,
		Duration: time.Since(start.at)})
}

// dropped is everything dropped so far: by the overflow policy, at
// shutdown, and by nats.go for a full pending buffer.
func (p *pool) dropped() uint64 {
	return p.stats.dropped.Load() + p.pendingDropped()
}

// pendingDropped is what nats.go dropped for a full pending buffer.
func (p *pool) pendingDropped() uint64 {
	n := p.stats.natsDropped.Load()
	if sub := p.sub.Load(); sub != nil {
		if d, err := sub.Dropped(); err == nil {
			n += uint64(d)
		}
	}
	return n
}

// pending is what nats.go holds for the current subscription.
func (p *pool) pending() int {
	if sub := p.sub.Load(); sub != nil {
		if n, _, err := sub.Pending(); err == nil {
			return n
		}
	}
	return 0
}

// retireSub stops reading counts from the current subscription, keeping
// what nats.go dropped for it.
func (p *pool) retireSub() {
	if sub := p.sub.Swap(nil); sub != nil {
		if d, err := sub.Dropped(); err == nil {
			p.stats.natsDropped.Add(uint64(d))
		}
	}
}

// snapshot returns the counters with the live queue and subscription
// figures.
func (p *pool) snapshot() Counters {
	c := p.stats
	pendingDropped := p.pendingDropped()
	return Counters{
		Received:       c.received.Load(),
		Processed:      c.processed.Load(),
		Failed:         c.failed.Load(),
		Panicked:       c.panicked.Load(),
		Dropped:        c.dropped.Load() + pendingDropped,
		PendingDropped: pendingDropped,
		Rejected:       c.rejected.Load(),
		InFlight:       c.inFlight.Load(),
		QueueDepth:     len(p.queue),
		Pending:        p.pending(),
	}
}

// stop waits for input to end (the caller drained or lost the
// subscription), lets the workers finish what is queued until deadline,
// then cancels the handlers' ctx. It returns how many messages were
// handled while stopping and how many were abandoned.
func (p *pool) stop(deadline time.Time) (finished, abandoned uint64) {
	before := p.stats.processed.Load() + p.stats.failed.Load()
	timer := time.NewTimer(time.Until(deadline))
	defer timer.Stop()

	// A callback may still be running after the subscription closed.
	for p.callbacks.Load() > 0 {
		select {
		case <-timer.C:
			close(p.closing)
			p.abortWorkers()
			return p.finishStop(before)
		case <-time.After(time.Millisecond):
		}
	}
	close(p.closing)

	// One nil a worker: each stops when it reaches one, after everything
	// queued before it.
	for range p.cfg.Workers {
		select {
		case p.queue <- nil:
		case <-timer.C:
			p.abortWorkers()
			return p.finishStop(before)
		}
	}
	done := make(chan struct{})
	go func() {
		p.wg.Wait()
		close(done)
	}()
	select {
	case <-done:
	case <-timer.C:
		p.abortWorkers()
		<-done
	}
	return p.finishStop(before)
}

// abortWorkers cancels running handlers and makes idle workers exit, then
// waits for them.
func (p *pool) abortWorkers() {
	p.abort.Store(true)
	p.cancel()
	for range p.cfg.Workers {
		select {
		case p.queue <- nil:
		default:
		}
	}
	p.wg.Wait()
}

func (p *pool) finishStop(before uint64) (finished, abandoned uint64) {
	abandoned = p.skipped.Load()
	for {
		select {
		case m := <-p.queue:
			if m != nil {
				abandoned++
			}
			continue
		default:
		}
		break
	}
	p.stats.dropped.Add(abandoned)
	close(p.monitorStop)
	<-p.monitorDone
	p.cancel()
	return p.stats.processed.Load() + p.stats.failed.Load() - before, abandoned
}

// respondError answers a request with a service error.
func respondError(raw *nats.Msg, e *ServiceError) {
	if raw.Reply == "" {
		return
	}
	reply := nats.NewMsg(raw.Reply)
	reply.Header.Set(ErrorHeader, e.Description)
	reply.Header.Set(ErrorCodeHeader, strconv.Itoa(e.Code))
	_ = raw.RespondMsg(reply)
}
