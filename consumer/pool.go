package consumer

import (
	"context"
	"runtime/debug"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/corral-go/corral/internal/event"
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
// for one run of the handler's Serve. Subscriptions feed it (enqueue for
// core handlers); stop drains it.
//
// Shutdown closes the queue, which is safe only once nothing can send on
// it: every subscription that feeds the pool is registered in inputs and
// counted done by its closed handler, which nats.go calls after its last
// callback has returned.
type pool struct {
	name    string
	subject string
	cfg     Config
	events  *event.Emitter
	stats   *counters
	invoke  invoker

	// Hooks of JetStream handlers (nil for core ones): after each handler
	// call, and for a queued message that will not be handled because the
	// pool is stopping.
	after func(ctx context.Context, worker int, m *Msg, err error)
	skip  func(m *Msg)
	// returnQueued stops without handling what is queued: it is handed to
	// skip instead (JetStream naks it, so that it is redelivered at once).
	returnQueued bool
	// load is how full the pool is, against cap(queue): queued messages
	// for core handlers, queued and running ones for JetStream handlers.
	load func() int
	// streamPending is, for JetStream handlers, what the stream holds for
	// the consumer.
	streamPending *atomic.Uint64

	queue chan *Msg
	// base is the ctx handlers get; cancelled when the grace period of a
	// stop runs out.
	base    context.Context
	cancel  context.CancelFunc
	abort   atomic.Bool // workers no longer start messages
	wg      sync.WaitGroup
	skipped atomic.Uint64 // messages abandoned at stop

	inputs     sync.WaitGroup // subscriptions that may still feed the pool
	closing    chan struct{}  // closed to release a Block callback at stop
	closeOnce  sync.Once
	inCallback atomic.Int32 // a Block callback is waiting for room

	// Slow-consumer episodes: started by overflow, ended by monitor. What
	// is dropped between episodes (nats.go can drop before the pool sees
	// the overflow) counts toward the next one.
	episodeMu     sync.Mutex
	episode       *episodeStart // the active episode, nil when none
	sinceEpisode  episodeStart  // counts when the last episode ended
	monitorEnded  bool
	episodeActive atomic.Bool // episode != nil, for the hot path and status
	lastOverflow  atomic.Int64
	monitorStop   chan struct{}
	monitors      sync.WaitGroup // the monitor of the active episode

	// The current subscription of a core handler, and its counts as last
	// read: nats.go stops answering once it is closed.
	sub         atomic.Pointer[nats.Subscription]
	subDropped  atomic.Int64
	subPending  atomic.Int64
	subMu       sync.Mutex // serializes reads and retirement of sub
	panicMu     sync.Mutex
	lastPanicAt time.Time
	panicsSince uint64
}

type episodeStart struct {
	at                time.Time
	dropped, rejected uint64
}

func newPool(name string, cfg Config, events *event.Emitter, stats *counters, invoke invoker) *pool {
	base, cancel := context.WithCancel(context.Background())
	return &pool{
		name: name, subject: cfg.Subject, cfg: cfg, events: events, stats: stats, invoke: invoke,
		queue:       make(chan *Msg, cfg.QueueSize),
		base:        base,
		cancel:      cancel,
		closing:     make(chan struct{}),
		monitorStop: make(chan struct{}),
	}
}

// start runs the workers.
func (p *pool) start() {
	p.sinceEpisode = episodeStart{dropped: p.dropped(), rejected: p.stats.rejected.Load()}
	p.wg.Add(p.cfg.Workers)
	for id := range p.cfg.Workers {
		go p.work(id)
	}
}

// feed registers sub as an input of the pool: the pool's queue is closed
// only after sub's last callback. The channel it returns is closed then
// too: once sub is unsubscribed or drained, or its connection closed.
func (p *pool) feed(sub *nats.Subscription) <-chan struct{} {
	p.inputs.Add(1)
	ended := make(chan struct{})
	var once sync.Once
	done := func(string) {
		once.Do(func() {
			p.inputs.Done()
			close(ended)
		})
	}
	// nats.go calls it when the subscription's goroutine exits, which a
	// closed connection makes it do, though its status never changes.
	sub.SetClosedHandler(done)
	if !sub.IsValid() {
		// Closed before the handler was set: nats.go may not call it.
		done("")
	}
	return ended
}

func (p *pool) work(id int) {
	defer p.wg.Done()
	w := worker{id: id}
	for m := range p.queue {
		if p.abort.Load() {
			p.unhandled(m)
			continue
		}
		p.run(&w, m)
	}
}

// unhandled disposes of a message the pool stops without handling.
func (p *pool) unhandled(m *Msg) {
	if p.skip != nil {
		p.skip(m)
		return
	}
	p.skipped.Add(1)
}

// worker is a worker's latency sampling state. Reading the clock costs
// more than a trivial handler on some machines, so handlers faster than
// sampleAbove are timed one message in sampleEvery (the first, the ninth,
// ...); slower ones always.
type worker struct {
	id   int
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
	if w.slow || w.n%sampleEvery == 1 {
		start := time.Now()
		err = p.call(ctx, m)
		d := time.Since(start)
		w.slow = d > sampleAbove
		p.stats.latency.record(d)
	} else {
		err = p.call(ctx, m)
	}
	if p.after != nil {
		p.after(ctx, w.id, m, err)
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
		p.panicsSince++
		p.panicMu.Unlock()
		return
	}
	suppressed := p.panicsSince
	p.lastPanicAt, p.panicsSince = now, 0
	p.panicMu.Unlock()
	p.events.Emit(HandlerPanicked{EventTime: p.events.Stamp(), Handler: p.name, Subject: m.Subject(), Err: pe, Suppressed: suppressed})
}

// enqueue is the core subscription's callback: it hands the message to
// the queue, applying the overflow policy when the queue is full.
func (p *pool) enqueue(raw *nats.Msg) {
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
		p.inCallback.Store(1)
		select {
		case p.queue <- m:
		case <-p.closing:
			p.stats.dropped.Add(1)
		}
		p.inCallback.Store(0)
	case DropNewest:
		p.stats.dropped.Add(1)
	case DropOldest:
		for {
			select {
			case <-p.queue:
				p.stats.dropped.Add(1)
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

// overflow records that the pool was full, starting an episode if none is
// active.
func (p *pool) overflow() {
	p.lastOverflow.Store(time.Now().UnixNano())
	if p.episodeActive.Load() {
		return
	}
	p.episodeMu.Lock()
	defer p.episodeMu.Unlock()
	if p.episode != nil || p.monitorEnded {
		return
	}
	p.episode = &episodeStart{at: time.Now(), dropped: p.sinceEpisode.dropped, rejected: p.sinceEpisode.rejected}
	p.episodeActive.Store(true)
	ev := SlowConsumerStarted{EventTime: p.events.Stamp(), Handler: p.name, Subject: p.subject,
		QueueSize: p.cfg.QueueSize, Overflow: p.cfg.Overflow}
	if p.streamPending != nil {
		ev.Pending = p.streamPending.Load()
	}
	p.events.Emit(ev)
	// A goroutine per episode rather than per pool: an idle pool costs
	// only its workers.
	p.monitors.Add(1)
	go p.monitor()
}

// monitor ends the active slow-consumer episode once the pool has been
// below half for a quiet period, or when the pool stops.
func (p *pool) monitor() {
	defer p.monitors.Done()
	t := time.NewTicker(episodeTick)
	defer t.Stop()
	for {
		select {
		case <-p.monitorStop:
			return // stop ends the episode
		case <-t.C:
			p.refreshSub()
			quiet := time.Since(time.Unix(0, p.lastOverflow.Load())) >= quietPeriod
			if quiet && p.loaded() <= cap(p.queue)/2 {
				p.endEpisode(false)
				return
			}
		}
	}
}

// endEpisode emits the end of the active episode, if any; final stops
// new episodes from starting.
func (p *pool) endEpisode(final bool) {
	p.episodeMu.Lock()
	defer p.episodeMu.Unlock()
	p.monitorEnded = p.monitorEnded || final
	start := p.episode
	if start == nil {
		return
	}
	now := episodeStart{dropped: p.dropped(), rejected: p.stats.rejected.Load()}
	p.events.Emit(SlowConsumerEnded{EventTime: p.events.Stamp(), Handler: p.name, Subject: p.subject,
		Dropped: now.dropped - start.dropped, Rejected: now.rejected - start.rejected,
		Duration: time.Since(start.at)})
	p.sinceEpisode = now
	p.episode = nil
	p.episodeActive.Store(false)
}

func (p *pool) loaded() int {
	if p.load != nil {
		return p.load()
	}
	return len(p.queue)
}

// dropped is everything dropped so far: by the overflow policy, at
// shutdown, and by nats.go for a full pending buffer.
func (p *pool) dropped() uint64 {
	return p.stats.dropped.Load() + p.pendingDropped()
}

// pendingDropped is what nats.go dropped for a full pending buffer.
func (p *pool) pendingDropped() uint64 {
	p.refreshSub()
	return p.stats.natsDropped.Load() + uint64(p.subDropped.Load())
}

// pending is what nats.go holds for the current subscription, not yet
// handed to the queue, or what the stream holds for a JetStream consumer.
func (p *pool) pending() int {
	if p.streamPending != nil {
		return int(p.streamPending.Load())
	}
	p.refreshSub()
	// nats.go counts a message as pending until its callback returns.
	return max(int(p.subPending.Load())-int(p.inCallback.Load()), 0)
}

// refreshSub reads the current subscription's counts while nats.go still
// answers.
func (p *pool) refreshSub() {
	p.subMu.Lock()
	defer p.subMu.Unlock()
	if sub := p.sub.Load(); sub != nil {
		if d, err := sub.Dropped(); err == nil {
			p.subDropped.Store(int64(d))
		}
		if n, _, err := sub.Pending(); err == nil {
			p.subPending.Store(int64(n))
		}
	}
}

// useSub makes sub the current subscription.
func (p *pool) useSub(sub *nats.Subscription) {
	p.subMu.Lock()
	defer p.subMu.Unlock()
	p.sub.Store(sub)
	p.subDropped.Store(0)
	p.subPending.Store(0)
}

// retireSub stops reading the current subscription, keeping what nats.go
// dropped for it; what it still held is lost when lost is set (its
// connection closed), and counted dropped.
func (p *pool) retireSub(lost bool) {
	p.subMu.Lock()
	defer p.subMu.Unlock()
	sub := p.sub.Swap(nil)
	if sub == nil {
		return
	}
	if d, err := sub.Dropped(); err == nil {
		p.subDropped.Store(int64(d))
	}
	p.stats.natsDropped.Add(uint64(p.subDropped.Swap(0)))
	pending := max(p.subPending.Swap(0)-int64(p.inCallback.Load()), 0)
	if lost {
		p.stats.dropped.Add(uint64(pending))
	}
}

// snapshot returns the counters with the live queue and subscription
// figures.
func (p *pool) snapshot() Counters {
	c := p.stats
	pendingDropped := p.pendingDropped()
	return Counters{
		Received:         c.received.Load(),
		Processed:        c.processed.Load(),
		Failed:           c.failed.Load(),
		Panicked:         c.panicked.Load(),
		Dropped:          c.dropped.Load() + pendingDropped,
		PendingDropped:   pendingDropped,
		Rejected:         c.rejected.Load(),
		InFlight:         c.inFlight.Load(),
		QueueDepth:       len(p.queue),
		Pending:          p.pending(),
		Acked:            c.acked.Load(),
		Naked:            c.naked.Load(),
		Terminated:       c.terminated.Load(),
		DeadLettered:     c.deadLettered.Load(),
		DeadLetterFailed: c.deadLetterFailed.Load(),
		Redelivered:      c.redelivered.Load(),
		AckFailed:        c.ackFailed.Load(),
		InProgress:       c.inProgress.Load(),
		PeakHeld:         c.peakHeld.Load(),
	}
}

// handled is the number of messages handled so far.
func (p *pool) handled() uint64 { return p.stats.processed.Load() + p.stats.failed.Load() }

// stop ends the pool once its inputs have ended (the caller drained or
// unsubscribed them): workers finish what is queued (or, with
// returnQueued, hand it back) until deadline; then the handlers' ctx is
// cancelled and what was not started is abandoned. It returns how many
// messages were handled since before and how many were abandoned.
func (p *pool) stop(deadline time.Time, before uint64) (finished, abandoned uint64) {
	if p.returnQueued {
		p.abort.Store(true)
	}
	timer := time.NewTimer(time.Until(deadline))
	defer timer.Stop()

	inputsDone := make(chan struct{})
	go func() {
		p.inputs.Wait()
		close(inputsDone)
	}()
	workersDone := make(chan struct{})
	go func() {
		p.wg.Wait()
		close(workersDone)
	}()

	select {
	case <-inputsDone:
	case <-timer.C:
		p.hardStop()
		<-inputsDone // a Block callback gives up once closing is closed
	}
	// Nothing sends any more: workers run down the queue and exit; after a
	// hard stop they hand back or abandon what they take.
	close(p.queue)
	select {
	case <-workersDone:
	case <-timer.C:
		p.hardStop()
		<-workersDone
	}
	abandoned = p.skipped.Load()
	p.stats.dropped.Add(abandoned)
	p.episodeMu.Lock()
	p.monitorEnded = true // no episode, and no monitor, starts from here
	p.episodeMu.Unlock()
	close(p.monitorStop)
	p.monitors.Wait()
	p.endEpisode(true)
	p.cancel()
	return p.handled() - before, abandoned
}

// hardStop ends the grace period: no new message starts and running
// handlers are cancelled.
func (p *pool) hardStop() {
	p.abort.Store(true)
	p.cancel()
	p.closeOnce.Do(func() { close(p.closing) })
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
