package consumer

import (
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go/micro"

	"github.com/corral-go/corral/internal/pool"
)

// Counters are a handler's message counts since it was declared.
type Counters struct {
	// Received counts messages the subscription delivered.
	Received uint64
	// Processed counts handler calls that returned nil, and requests
	// answered with a 4xx service error (also in ClientErrors).
	Processed uint64
	// Failed counts handler calls that returned an error or panicked; for
	// request handlers, requests answered with any service error but a
	// 4xx (500, 503, 504, ...).
	Failed uint64
	// ClientErrors counts requests answered with a 4xx service error
	// (400 bad request, 404 not found, ...): the request's fault, not the
	// handler's, so not in Failed.
	ClientErrors uint64
	// Panicked counts handler calls that panicked (also in Failed).
	Panicked uint64
	// Dropped counts messages dropped by the overflow policy, by nats.go
	// for a full pending buffer, or abandoned at shutdown.
	Dropped uint64
	// PendingDropped is the part of Dropped that nats.go dropped because
	// the subscription's pending buffer was full.
	PendingDropped uint64
	// Rejected counts requests answered "busy" by the reject policy.
	Rejected uint64
	// SlowConsumerEpisodes counts the slow-consumer episodes begun (each
	// a SlowConsumerStarted event).
	SlowConsumerEpisodes uint64
	// InFlight is the number of handler calls running now.
	InFlight int64
	// QueueDepth is the number of messages waiting for a worker now.
	QueueDepth int
	// Pending is, for core handlers, the number of messages nats.go holds
	// for the subscription, not yet handed to the queue; for JetStream
	// handlers, what the stream still holds for the consumer.
	Pending int

	// JetStream handlers only.
	// Acked, Naked and Terminated count how messages were settled; Naked
	// includes those handed back unstarted at shutdown.
	Acked, Naked, Terminated uint64
	// DeadLettered counts messages stored on the dead-letter subject and
	// terminated; DeadLetterFailed those whose copy could not be stored.
	DeadLettered, DeadLetterFailed uint64
	// Redelivered counts messages delivered more than once.
	Redelivered uint64
	// AckFailed counts acks that could not be sent or confirmed; those
	// messages will be redelivered.
	AckFailed uint64
	// InProgress counts in-progress acks sent for messages held long.
	InProgress uint64
	// PeakHeld is the most messages held at once (running and queued);
	// never more than workers + queue size.
	PeakHeld int64
}

// Latency summarizes how long handler calls took: the worker pool's
// measure, sampled (every call of a handler slower than 20µs, one in eight
// of faster ones) and read from a histogram, within 6%.
type Latency = pool.Latency

// counters is written by the subscription's goroutine (the input side)
// and by the workers (the output side); the two sides sit on separate
// cache lines so they do not slow each other down.
type counters struct {
	received, dropped, rejected atomic.Uint64
	slowEpisodes                atomic.Uint64
	// natsDropped is what nats.go dropped for subscriptions no longer in
	// use; the current one's count is read from it.
	natsDropped atomic.Uint64
	_           [64]byte
	// clientErrors counts a request handler's 4xx answers, written by the
	// workers.
	clientErrors atomic.Uint64
	// A request handler's time spent in its calls, and the last service
	// error it answered, for its micro service's stats.
	processing atomic.Int64
	lastError  atomic.Pointer[string]
	// JetStream settlement, written by the workers.
	acked, naked, terminated, deadLettered, deadLetterFailed atomic.Uint64
	redelivered, ackFailed, inProgress                       atomic.Uint64
	peakHeld                                                 atomic.Int64
	// work counts the handler calls of every run's pool: processed,
	// failed, panicked, in flight, and their latency.
	work pool.Stats
}

// runView is what Status reads of a handler's current run, beside the
// handler's counters.
type runView struct {
	queue    queue
	slow     *episodes
	upstream upstream
}

// snapshot returns c with the run's live queue and upstream figures.
func (v *runView) snapshot(c *counters) Counters {
	pendingDropped := v.upstream.pendingDropped()
	return Counters{
		Received:             c.received.Load(),
		Processed:            c.work.Processed(),
		Failed:               c.work.Failed(),
		ClientErrors:         c.clientErrors.Load(),
		Panicked:             c.work.Panicked(),
		Dropped:              c.dropped.Load() + pendingDropped,
		PendingDropped:       pendingDropped,
		Rejected:             c.rejected.Load(),
		SlowConsumerEpisodes: c.slowEpisodes.Load(),
		InFlight:             c.work.InFlight(),
		QueueDepth:           v.queue.Len(),
		Pending:              v.upstream.pending(),
		Acked:                c.acked.Load(),
		Naked:                c.naked.Load(),
		Terminated:           c.terminated.Load(),
		DeadLettered:         c.deadLettered.Load(),
		DeadLetterFailed:     c.deadLetterFailed.Load(),
		Redelivered:          c.redelivered.Load(),
		AckFailed:            c.ackFailed.Load(),
		InProgress:           c.inProgress.Load(),
		PeakHeld:             c.peakHeld.Load(),
	}
}

// endpointStats are b's counters as a micro endpoint's: num_requests
// counts the requests answered (handled, or rejected busy), num_errors
// those answered with a service error (Failed, ClientErrors and
// Rejected), processing_time the time spent in handler calls, and its
// average is over the calls.
func (c *counters) endpointStats(b *handlerBase) *micro.EndpointStats {
	calls := c.work.Handled()
	rejected := c.rejected.Load()
	st := &micro.EndpointStats{
		Name: b.name, Subject: b.cfg.Subject, QueueGroup: b.cfg.QueueGroup,
		NumRequests:    int(calls + rejected),
		NumErrors:      int(c.work.Failed() + c.clientErrors.Load() + rejected),
		ProcessingTime: time.Duration(c.processing.Load()),
	}
	if calls > 0 {
		st.AverageProcessingTime = st.ProcessingTime / time.Duration(calls)
	}
	if last := c.lastError.Load(); last != nil {
		st.LastError = *last
	}
	return st
}

// Histogram is a cumulative histogram of a handler's sampled call
// durations, sampled as Latency is.
type Histogram = pool.Histogram

// Histograms reads every handler's call durations at bounds (ascending),
// by handler name, for a metrics exporter: it costs the handlers nothing,
// as it reads what the worker pool records for Latency.
func (g *Group) Histograms(bounds []time.Duration) map[string]Histogram {
	g.mu.Lock()
	members := append([]*member(nil), g.handlers...)
	g.mu.Unlock()
	out := make(map[string]Histogram, len(members))
	for _, m := range members {
		c := m.svc.base()
		out[c.name] = c.stats.work.Histogram(bounds)
	}
	return out
}
