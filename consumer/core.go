package consumer

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/corral-go/corral/connection"
	"github.com/corral-go/corral/internal/event"
)

// handlerBase is what every kind of handler has: its declaration, its
// counters (which live as long as the declaration), the pool of its
// current run, and whether it receives messages.
type handlerBase struct {
	name   string
	cfg    Config
	src    connection.Source
	events *event.Emitter
	stats  *counters

	current atomicPool
	ready   atomic.Bool
}

func (b *handlerBase) base() *handlerBase { return b }

// String names the handler in the tree.
func (b *handlerBase) String() string { return "handler/" + b.name }

// core runs one core-NATS handler: a subscription (optionally in a queue
// group) feeding a pool. It is a suture.Service; each Serve is one run
// with its own pool.
type core struct {
	handlerBase
	invoke invoker
}

// Serve subscribes on the current connection and feeds the pool until ctx
// ends; then it drains the subscription and the pool within the shutdown
// timeout. When the connection is replaced, it subscribes again on the new
// one.
func (c *core) Serve(ctx context.Context) error {
	p := newPool(c.name, c.cfg, c.events, c.stats, c.invoke)
	c.current.Store(p)
	p.start()
	for {
		nc, gone, err := c.src.Conn(ctx)
		if err != nil {
			c.stop(p, nil)
			if ctx.Err() != nil {
				return ctx.Err()
			}
			return fmt.Errorf("connection: %w", err)
		}
		sub, release, err := c.subscribe(nc, p)
		if err != nil {
			c.stop(p, nil)
			if ctx.Err() != nil {
				return ctx.Err()
			}
			return fmt.Errorf("subscribe %s: %w", c.cfg.Subject, err)
		}
		c.ready.Store(true)
		c.events.Emit(Subscribed{EventTime: c.events.Stamp(), Handler: c.name, Subject: c.cfg.Subject, Queue: c.cfg.QueueGroup})
		select {
		case <-ctx.Done():
			c.ready.Store(false)
			c.stop(p, sub)
			release()
			return ctx.Err()
		case <-gone:
			c.ready.Store(false)
			release()
			// The subscription died with its connection; what nats.go
			// still held for it is lost (core NATS is at most once).
			p.retireSub(true)
		}
	}
}

func (c *core) subscribe(nc *nats.Conn, p *pool) (*nats.Subscription, func(), error) {
	var sub *nats.Subscription
	var err error
	lastErr := nc.LastError()
	if c.cfg.QueueGroup != "" {
		sub, err = nc.QueueSubscribe(c.cfg.Subject, c.cfg.QueueGroup, p.enqueue)
	} else {
		sub, err = nc.Subscribe(c.cfg.Subject, p.enqueue)
	}
	if err != nil {
		return nil, nil, err
	}
	p.feed(sub)
	release := c.src.ClaimSlowConsumer(sub, p.overflow)
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
	if err := nc.FlushTimeout(subscribeTimeout); err != nil {
		return fail(err)
	}
	if err := nc.LastError(); err != lastErr && refuses(err, c.cfg.Subject, c.cfg.QueueGroup) {
		return fail(err)
	}
	p.useSub(sub)
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

// stop drains the subscription, so that nothing new arrives and what
// nats.go holds is handled, then the pool, all within the grace period;
// it reports what was handled while stopping and what was abandoned.
func (c *core) stop(p *pool, sub *nats.Subscription) {
	start, before := time.Now(), p.handled()
	deadline := start.Add(grace(c.cfg.Restart.ShutdownTimeout))
	var abandoned uint64
	if sub != nil {
		p.refreshSub()
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
			p.refreshSub()
			if n, _, err := sub.Pending(); err == nil {
				lost := uint64(max(n-int(p.inCallback.Load()), 0))
				abandoned += lost
				c.stats.dropped.Add(lost)
			}
			_ = sub.Unsubscribe()
		}
		p.retireSub(false)
	}
	finished, queued := p.stop(deadline, before)
	c.events.Emit(Drained{EventTime: c.events.Stamp(), Handler: c.name, Subject: c.cfg.Subject,
		Finished: finished, Abandoned: abandoned + queued, Took: time.Since(start)})
}

// grace is how much of a shutdown timeout a handler spends finishing work
// before it cancels its handlers' ctx: the rest is left for them to
// return.
func grace(shutdown time.Duration) time.Duration {
	return shutdown - min(shutdown/10, time.Second)
}

// handleInvoker adapts a Handler.
func handleInvoker(h Handler) invoker {
	return h.Handle
}

// requestInvoker adapts a RequestHandler: the reply, or the error as a
// service error, goes back to the caller.
func requestInvoker(h RequestHandler) invoker {
	return func(ctx context.Context, m *Msg) error {
		reply, err := h.HandleRequest(ctx, m)
		if m.raw.Reply == "" {
			return err
		}
		if err != nil {
			respondError(m.raw, serviceError(ctx, err))
			return err
		}
		return m.raw.RespondMsg(&nats.Msg{Subject: m.raw.Reply, Data: reply.Data, Header: reply.Header})
	}
}

func serviceError(ctx context.Context, err error) *ServiceError {
	var se *ServiceError
	switch {
	case errors.As(err, &se):
		return se
	case errors.Is(err, context.DeadlineExceeded) && ctx.Err() != nil:
		return &ServiceError{Code: 504, Description: "timeout: " + err.Error()}
	case errors.Is(err, context.Canceled) && ctx.Err() != nil:
		return &ServiceError{Code: 503, Description: "handler stopping: " + err.Error()}
	default:
		return &ServiceError{Code: 500, Description: err.Error()}
	}
}
