package consumer

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/corral-go/corral/internal/pool"
	"github.com/corral-go/corral/supervisor"
)

// coreHandler runs one core-NATS handler: a subscription (optionally in a
// queue group) feeding a pool. It is a suture.Service; each Serve is one
// run, a coreRun, with its own pool.
type coreHandler struct {
	handlerBase
	invoke invoker
}

// coreRun is one Serve of a core handler, and the work its pool runs:
// the handler's invoker, with nothing to settle.
type coreRun struct {
	c    *coreHandler
	pool *pool.Pool[*Msg]
	sub  *subCounts
	slow *episodes
	// direct says the subscription's delivery goroutine is the run's one
	// worker (see direct).
	direct bool
	// abandoned counts queued messages the stop's deadline left unhandled.
	abandoned atomic.Uint64
}

func (c *coreHandler) newRun() *coreRun {
	c.subscribedOnce.Store(false)
	r := &coreRun{c: c, direct: direct(c.cfg)}
	r.sub = &subCounts{stats: c.stats, direct: r.direct}
	r.pool = pool.New[*Msg](pool.Config{Workers: c.cfg.Workers, QueueSize: c.cfg.QueueSize, Timeout: c.cfg.Timeout,
		Stats: &c.stats.work}, r)
	var q queue = r.pool
	var up upstream = r.sub
	if r.direct {
		d := &pendingQueue{sub: r.sub, size: c.cfg.QueueSize}
		q, up = d, d
	}
	r.slow = newEpisodes(&c.handlerBase, c.cfg.Subject, q.Cap, q.Len, up)
	c.current.Store(&runView{queue: q, slow: r.slow, upstream: up})
	return r
}

// direct reports whether a core handler runs on its subscription's
// delivery goroutine: one worker that blocks when it is busy, so that the
// queue in front of it would only hand each message from nats.go's
// goroutine to another that runs it, one at a time. Without that hop a
// message costs a goroutine switch less, and a burst waits in one buffer,
// not two. What the handler sees is the same: messages in order, one at
// a time, its timeout, its panics recovered. The queue is then the first
// QueueSize messages nats.go holds (see pendingQueue), so its depth, the
// slow-consumer episodes it starts and the pending beyond it read as
// before; nats.go's pending limits still bound the whole.
func direct(cfg Config) bool { return cfg.Workers == 1 && cfg.Overflow == Block }

// Serve subscribes on the current connection and feeds the pool until ctx
// ends; then it drains the subscription and the pool within the shutdown
// timeout. When the connection is replaced, it subscribes again on the new
// one.
func (c *coreHandler) Serve(ctx context.Context) error {
	r := c.newRun()
	r.pool.Start()
	for {
		nc, gone, err := c.src.Conn(ctx)
		if err != nil {
			r.stop(nil)
			if ctx.Err() != nil {
				return ctx.Err()
			}
			return err
		}
		sub, release, err := r.subscribe(nc)
		if err != nil {
			r.stop(nil)
			if ctx.Err() != nil {
				return ctx.Err()
			}
			return fmt.Errorf("subscribe %s: %w", c.cfg.Subject, err)
		}
		c.subscribed(Subscribed{EventTime: c.events.Stamp(), Handler: c.name, Subject: c.cfg.Subject, Queue: c.cfg.QueueGroup})
		select {
		case <-ctx.Done():
			c.ready.Store(false)
			r.stop(sub)
			release()
			return ctx.Err()
		case <-gone:
			c.ready.Store(false)
			release()
			// The subscription died with its connection; what nats.go
			// still held for it is lost (core NATS is at most once).
			r.sub.retire(true)
		}
	}
}

func (r *coreRun) subscribe(nc *nats.Conn) (*nats.Subscription, func(), error) {
	c := r.c
	var sub *nats.Subscription
	var err error
	lastErr := nc.LastError()
	if c.cfg.QueueGroup != "" {
		sub, err = nc.QueueSubscribe(c.cfg.Subject, c.cfg.QueueGroup, r.enqueue)
	} else {
		sub, err = nc.Subscribe(c.cfg.Subject, r.enqueue)
	}
	if err != nil {
		return nil, nil, err
	}
	r.pool.Feed(sub)
	release := c.src.ClaimSlowConsumer(sub, r.slow.overflow)
	fail := func(err error) (*nats.Subscription, func(), error) {
		release()
		_ = sub.Unsubscribe()
		return nil, nil, err
	}
	if err := sub.SetPendingLimits(c.cfg.PendingMsgs, int(c.cfg.PendingBytes)); err != nil {
		return fail(err)
	}
	// A round trip: the server has the subscription, or has refused it,
	// when Flush returns, so messages published after Subscribed reach it.
	if err := c.flush.flush(nc, subscribeTimeout); err != nil {
		return fail(err)
	}
	if err := nc.LastError(); err != lastErr && refuses(err, c.cfg.Subject, c.cfg.QueueGroup) {
		return fail(err)
	}
	r.sub.use(sub)
	return sub, release, nil
}

const subscribeTimeout = 5 * time.Second

// refuses reports whether err is the server refusing a subscription to
// subject in queue. nats.go reports it only as the connection's last
// error, which another subscription's error can replace first: a refusal
// missed that way is seen again at the next restart.
func refuses(err error, subject, queue string) bool {
	if !errors.Is(err, nats.ErrPermissionViolation) {
		return false
	}
	msg := err.Error()
	if !strings.Contains(msg, `Subscription to "`+subject+`"`) {
		return false
	}
	if queue == "" {
		return !strings.Contains(msg, "using queue")
	}
	return strings.Contains(msg, `using queue "`+queue+`"`)
}

// enqueue is the subscription's callback: it hands the message to the
// pool, applying the overflow policy when the queue is full.
func (r *coreRun) enqueue(raw *nats.Msg) {
	c := r.c
	m := &Msg{raw: raw, handler: c.name}
	c.stats.received.Add(1)
	if r.direct {
		r.run(m)
		return
	}
	if r.pool.TryPut(m) {
		return
	}
	r.slow.overflow()
	switch c.cfg.Overflow {
	case Block:
		r.sub.blocked.Store(1)
		// Gives up only when the stop's grace period has run out.
		if r.pool.Put(context.Background(), m) != nil {
			c.stats.dropped.Add(1)
		}
		r.sub.blocked.Store(0)
	case DropNewest:
		c.stats.dropped.Add(1)
	case DropOldest:
		for {
			if _, ok := r.pool.Evict(); ok {
				c.stats.dropped.Add(1)
			}
			if r.pool.TryPut(m) {
				return
			}
		}
	case Reject:
		c.stats.rejected.Add(1)
		respondError(raw, &ServiceError{Code: 503, Description: "busy: handler queue is full"})
	}
}

// run handles m on the subscription's goroutine, for a direct run. Once
// it is handled, more than the queue's worth waiting behind it is an
// overflow, as a message would have found a pool's queue full. Counting
// them locks the subscription against nats.go's reader, so after a fast
// handler one message in eight checks (a burst is seen eight messages
// late at most), after a slow one every message.
func (r *coreRun) run(m *Msg) {
	if n, slow := r.pool.Run(m); slow || n%8 == 0 {
		// nats.go counts m pending until this callback returns.
		if pending, _, err := m.raw.Sub.Pending(); err == nil && pending-1 > r.c.cfg.QueueSize {
			r.slow.overflow()
		}
	}
}

// stop drains the subscription, so that nothing new arrives and what
// nats.go holds is handled, then the pool, all within the grace period;
// it reports what was handled while stopping and what was abandoned.
func (r *coreRun) stop(sub *nats.Subscription) {
	c := r.c
	start, before := time.Now(), c.stats.work.Handled()
	deadline := start.Add(c.cfg.Restart.Grace())
	var abandoned uint64
	if sub != nil {
		abandoned = r.drain(sub, deadline)
	}
	r.pool.Stop(deadline)
	queued := r.abandoned.Load()
	c.stats.dropped.Add(queued)
	r.slow.stop()
	c.drained(c.cfg.Subject, start, c.stats.work.Handled()-before, abandoned+queued, 0)
}

// drain drains sub until deadline and retires it; it returns how many
// messages nats.go still held for it then, which are lost.
func (r *coreRun) drain(sub *nats.Subscription, deadline time.Time) (lost uint64) {
	r.sub.refresh()
	closed := sub.StatusChanged(nats.SubscriptionClosed)
	if err := sub.Drain(); err == nil {
		t := time.NewTimer(time.Until(deadline))
		select {
		case <-closed:
		case <-t.C:
		}
		t.Stop()
	}
	if sub.IsValid() {
		// Out of time: what nats.go still holds is discarded.
		lost = r.sub.unread(sub)
		r.c.stats.dropped.Add(lost)
		_ = sub.Unsubscribe()
	}
	r.sub.retire(false)
	return lost
}

// Handle runs the handler's invoker.
func (r *coreRun) Handle(ctx context.Context, m *Msg) error { return r.c.invoke(ctx, m) }

// Settle does nothing: a core message is gone once handled.
func (r *coreRun) Settle(context.Context, *Msg, error) {}

// Return counts a queued message the stop left unhandled; core NATS has
// no redelivery, so it is lost.
func (r *coreRun) Return(*Msg) { r.abandoned.Add(1) }

// ReportPanic emits a HandlerPanicked event.
func (r *coreRun) ReportPanic(m *Msg, pe *supervisor.PanicError, suppressed uint64) {
	r.c.reportPanic(m, pe, suppressed)
}

// ReportFailure emits a HandlerFailed event.
func (r *coreRun) ReportFailure(m *Msg, err error, suppressed uint64) {
	r.c.reportFailure(m, err, suppressed)
}
