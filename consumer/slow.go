package consumer

import (
	"sync"
	"sync/atomic"
	"time"
)

const (
	// quietPeriod is how long a slow-consumer episode must go without an
	// overflow before it ends; it also rate-limits episodes to one start
	// and one end log line per period.
	quietPeriod = time.Second
	// episodeTick is how often an active episode is checked for its end.
	episodeTick = 100 * time.Millisecond
)

// episodes reports one run's slow-consumer episodes: an overflow starts
// one (SlowConsumerStarted) unless one is active, and it ends
// (SlowConsumerEnded, with what it dropped and rejected) once the handler
// has stayed at most half full for a quiet period, or when the run stops.
// What is dropped between episodes (nats.go can drop before the pool sees
// the overflow) counts toward the next one.
//
// Core handlers overflow when a message finds the queue full, or when
// nats.go reports the subscription as a slow consumer; JetStream handlers
// when they have held all they can for longer than SlowAfter. Episodes
// are the consumer's, not the pool's: they are measured in what the
// overflow policy and nats.go dropped or rejected, and reported as the
// handler's events.
type episodes struct {
	h        *handlerBase
	subject  string
	capacity func() int
	// load is how full the handler is, against capacity: queued messages
	// for core handlers, held ones for JetStream handlers.
	load     func() int
	upstream upstream

	mu           sync.Mutex
	current      *episodeStart // nil when none is active
	since        episodeStart  // counts when the last episode ended
	ended        bool          // the run is stopping: no episode starts
	active       atomic.Bool   // current != nil, for the hot path and Status
	lastOverflow atomic.Int64
	stopMonitor  chan struct{}
	monitors     sync.WaitGroup // the monitor of the active episode
}

type episodeStart struct {
	at                time.Time
	dropped, rejected uint64
}

// newEpisodes returns the episodes of a run whose events name subject.
func newEpisodes(h *handlerBase, subject string, capacity, load func() int, up upstream) *episodes {
	e := &episodes{h: h, subject: subject, capacity: capacity, load: load, upstream: up, stopMonitor: make(chan struct{})}
	e.since = episodeStart{dropped: e.dropped(), rejected: h.stats.rejected.Load()}
	return e
}

// overflow records that the handler was full, starting an episode if none
// is active.
func (e *episodes) overflow() {
	e.lastOverflow.Store(time.Now().UnixNano())
	if e.active.Load() {
		return
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.current != nil || e.ended {
		return
	}
	e.current = &episodeStart{at: time.Now(), dropped: e.since.dropped, rejected: e.since.rejected}
	e.active.Store(true)
	e.h.stats.slowEpisodes.Add(1)
	ev := SlowConsumerStarted{EventTime: e.h.events.Stamp(), Handler: e.h.name, Subject: e.subject,
		QueueSize: e.capacity(), Overflow: e.h.cfg.Overflow}
	if e.h.cfg.IsJetStream() {
		ev.Pending = uint64(e.upstream.pending())
	}
	e.h.events.Emit(ev)
	// A goroutine per episode rather than per run: an idle handler costs
	// only its workers.
	e.monitors.Add(1)
	go e.monitor()
}

// monitor ends the active episode once the handler has been at most half
// full for a quiet period, or when the run stops.
func (e *episodes) monitor() {
	defer e.monitors.Done()
	t := time.NewTicker(episodeTick)
	defer t.Stop()
	for {
		select {
		case <-e.stopMonitor:
			return // stop ends the episode
		case <-t.C:
			e.upstream.refresh()
			quiet := time.Since(time.Unix(0, e.lastOverflow.Load())) >= quietPeriod
			if quiet && e.load() <= e.capacity()/2 {
				e.end(false)
				return
			}
		}
	}
}

// end emits the end of the active episode, if any; final stops new
// episodes from starting.
func (e *episodes) end(final bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.ended = e.ended || final
	start := e.current
	if start == nil {
		return
	}
	now := episodeStart{dropped: e.dropped(), rejected: e.h.stats.rejected.Load()}
	e.h.events.Emit(SlowConsumerEnded{EventTime: e.h.events.Stamp(), Handler: e.h.name, Subject: e.subject,
		Dropped: now.dropped - start.dropped, Rejected: now.rejected - start.rejected,
		Duration: time.Since(start.at)})
	e.since = now
	e.current = nil
	e.active.Store(false)
}

// stop ends the active episode, once what the run's stop dropped is
// counted, and starts no other.
func (e *episodes) stop() {
	e.mu.Lock()
	e.ended = true // no episode, and no monitor, starts from here
	e.mu.Unlock()
	close(e.stopMonitor)
	e.monitors.Wait()
	e.end(true)
}

// dropped is everything dropped so far: by the overflow policy, at
// shutdown, and by nats.go for a full pending buffer.
func (e *episodes) dropped() uint64 {
	return e.h.stats.dropped.Load() + e.upstream.pendingDropped()
}
