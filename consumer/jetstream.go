package consumer

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/corral-go/corral/internal/afterfunc"
	"github.com/corral-go/corral/internal/episode"
	"github.com/corral-go/corral/internal/jsapi"
	"github.com/corral-go/corral/internal/pool"
	"github.com/corral-go/corral/internal/pull"
)

// jsHandler runs one JetStream handler: pull requests sized to the room
// the run has free, so that no message waits in a prefetch buffer while
// its ack wait runs, feed the pool, whose results ack, nak, terminate or
// dead-letter each message. It is a suture.Service; each Serve is one
// run, a jsRun.
type jsHandler struct {
	handlerBase
	h          Handler
	numPending atomic.Uint64 // the stream's pending count, from the last message
	// The consumer's ack-pending count and limit, as last read, and
	// whether it is near the limit (see ackpending.go).
	ackPending, maxAckPending atomic.Int64
	nearMaxAckPending         atomic.Bool
	// deadLetterFailing counts dead-letter copies that failed in a row
	// with the same error; consumeFailing the failures to consume since
	// the consumer last answered.
	deadLetterFailing, consumeFailing episode.Repeats
}

// jsRun is the state of one Serve, and the work its pool runs: Handle
// below, Settle and Return in settle.go.
type jsRun struct {
	j    *jsHandler
	pool *pool.Pool[*Msg]
	slow *episodes
	// puller asks for the room free in the run's capacity (workers +
	// queue); held is what the run holds, for the keepalive.
	puller   *pull.Puller
	held     *heldMsgs
	js       atomic.Pointer[jetstream.JetStream]
	returned atomic.Uint64 // messages handed back for redelivery at once
	// ackWait and maxDeliver are the consumer's: configured, or read from a
	// bound consumer by ensure while the keepalive and the workers read them.
	// deadLetterClient says MaxDeliver is enforced here, so that a failed
	// dead-letter publish can be tried again.
	ackWait          atomic.Int64 // nanoseconds
	maxDeliver       atomic.Int64
	deadLetterClient bool
	// stopBy is when a stop's grace period ends (unix nanoseconds, 0 before
	// a stop).
	stopBy atomic.Int64
	// terminal holds, by stream sequence, the messages the handler declared
	// terminal whose dead-letter copy has not been stored yet: on their
	// redelivery only the copy is tried again, never the handler.
	terminal sync.Map // uint64 -> *TerminalError
}

// errPastMaxDeliver marks a message delivered past MaxDeliver: only its
// dead letter is tried again.
var errPastMaxDeliver = errors.New("delivered past max_deliver; its dead-letter copy failed before")

// errConnClosed marks a message whose connection closed before it started:
// it cannot be acked, and the server redelivers it after its ack wait.
var errConnClosed = errors.New("its connection closed before it started")

func (j *jsHandler) newRun() *jsRun {
	j.subscribedOnce.Store(false)
	capacity := j.cfg.Workers + j.cfg.QueueSize
	r := &jsRun{j: j, held: newHeldMsgs()}
	r.setLimits(j.cfg.AckWait, j.cfg.MaxDeliver)
	r.deadLetterClient = j.cfg.DeadLetter != "" && j.cfg.MaxDeliver > 0 && !j.cfg.Bind
	// The queue holds all the run may hold: putting a held message never
	// waits.
	r.pool = pool.New[*Msg](pool.Config{Workers: j.cfg.Workers, QueueSize: capacity, Timeout: j.cfg.Timeout,
		Stats: &j.stats.work}, r)
	pc := pull.Config{APIPrefix: j.cfg.JetStreamAPI.Prefix(), Stream: j.cfg.Stream, Consumer: j.cfg.Consumer, Capacity: capacity,
		Source: j.src, Feed: r.pool.Feed, Peak: &j.stats.peakHeld, Recovered: j.consumeRecovered}
	if j.cfg.adaptQueue {
		pc.Floor, pc.Start = j.cfg.Workers, j.cfg.Workers+max(j.cfg.Workers, defaultJetStreamQueue)
		pc.MaxBytes = adaptBytes
	}
	r.puller = pull.New(pc, r)
	up := streamPending{n: &j.numPending}
	// Full is against what the puller asks to hold, which adapts below
	// the capacity with the default queue_size.
	r.slow = newEpisodes(&j.handlerBase, j.cfg.Stream, r.puller.Want, r.puller.Held, up)
	j.current.Store(&runView{queue: r.pool, slow: r.slow, upstream: up})
	return r
}

// Serve declares the consumer (or checks the bound one) and pulls from it
// until ctx ends; then it stops pulling, drains its inboxes, hands back
// what did not start and lets what runs finish, within the shutdown
// timeout. When the connection is replaced, it pulls on the new one.
func (j *jsHandler) Serve(ctx context.Context) error {
	r := j.newRun()
	// The workers and the keepalive start once the consumer is ensured: a
	// bound consumer's ack wait is known from then on.
	started := false
	stopKeepalive := func() {}
	defer func() { stopKeepalive() }()
	// The grace period is timed from when the stop was asked, as the
	// supervisor times the shutdown timeout, not from when the pull
	// loop sees it: on a loaded machine that may be much later.
	defer afterfunc.Run(ctx, r.beginStop)()

	fail := func(err error) error {
		r.beginStop()
		r.stop()
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return err
	}
	for {
		nc, gone, err := j.src.Conn(ctx)
		if err != nil {
			return fail(err)
		}
		js, err := j.cfg.JetStreamAPI.New(nc)
		if err != nil {
			return fail(fmt.Errorf("jetstream: %w", err))
		}
		r.js.Store(&js)
		if _, err := r.ensure(ctx, js); err != nil {
			return fail(err)
		}
		if !started {
			if err := j.checkDeadLetter(ctx, js); err != nil {
				return fail(err)
			}
			started = true
			r.pool.Start()
			stopKeepalive = r.startKeepalive(ctx)
		}
		unwatch := j.watchAdvisories(nc)
		err = r.pull(ctx, nc, js, gone)
		unwatch()
		if errors.Is(err, jsapi.ErrConnGone) && ctx.Err() == nil {
			continue
		}
		return fail(err)
	}
}

// beginStop starts the grace period: no message starts any more (the
// queued ones are handed back), and draining the inbox is bounded by it.
func (r *jsRun) beginStop() {
	r.stopBy.CompareAndSwap(0, time.Now().Add(r.j.cfg.Restart.Grace()).UnixNano())
	r.pool.Abort()
}

// stop hands back what did not start and lets what runs finish.
func (r *jsRun) stop() {
	start, before := time.Now(), r.j.stats.work.Handled()
	r.pool.Stop(time.Unix(0, r.stopBy.Load()))
	r.slow.stop()
	r.j.drained(r.j.cfg.Stream, start, r.j.stats.work.Handled()-before, 0, r.returned.Swap(0))
}

// setLimits records the consumer's ack wait and max deliveries.
func (r *jsRun) setLimits(ackWait time.Duration, maxDeliver int) {
	r.ackWait.Store(int64(ackWait))
	r.maxDeliver.Store(int64(maxDeliver))
}

// slowAfter is how long the run may hold all it can before it is
// reported: configured, or half the consumer's ack wait.
func (r *jsRun) slowAfter() time.Duration {
	if d := r.j.cfg.SlowAfter; d > 0 {
		return d
	}
	return time.Duration(r.ackWait.Load()) / 2
}

// Handle runs the handler, unless the message can only be dead-lettered
// again or can no longer be acked.
func (r *jsRun) Handle(ctx context.Context, m *Msg) error {
	if m.js.nc.IsClosed() {
		return errConnClosed
	}
	if r.deadLetterClient && m.js.md.NumDelivered > uint64(r.maxDeliver.Load()) {
		return errPastMaxDeliver
	}
	if term, ok := r.terminal.Load(m.js.md.Sequence.Stream); ok {
		return term.(*TerminalError)
	}
	return r.j.h.Handle(ctx, m)
}

// streamPending is the upstream of a JetStream handler: what the stream
// holds for the consumer, as the last message said. nats.go drops
// nothing: an inbox buffers all that requests bring.
type streamPending struct{ n *atomic.Uint64 }

func (s streamPending) refresh()               {}
func (s streamPending) pending() int           { return int(s.n.Load()) }
func (s streamPending) pendingDropped() uint64 { return 0 }
