package consumer

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/corral-go/corral/supervisor"
)

// Conns is where a handler gets its connection: connection.Supervisor, or
// connection.Fixed for a connection the application manages. The channel
// is closed when the connection is gone for good; Conn is then asked for
// its replacement.
type Conns interface {
	Conn(ctx context.Context) (*nats.Conn, <-chan struct{}, error)
}

// core runs one core-NATS handler: a subscription (optionally in a queue
// group) feeding a pool. It is a suture.Service; each Serve is one run
// with its own pool, and its counters live as long as the declaration.
type core struct {
	name   string
	cfg    Config
	conns  Conns
	events *supervisor.Events
	stats  *counters
	invoke invoker

	current atomicPool
	ready   atomic.Bool // subscribed on a live connection
}

func (c *core) String() string { return "handler/" + c.name }

// Serve subscribes on the current connection and feeds the pool until ctx
// ends; then it drains the subscription and the pool within the shutdown
// timeout. When the connection is replaced, it subscribes again on the new
// one.
func (c *core) Serve(ctx context.Context) error {
	p := newPool(c.name, c.cfg, c.events, c.stats, c.invoke)
	c.current.Store(p)
	p.start()
	for {
		nc, gone, err := c.conns.Conn(ctx)
		if err != nil {
			c.stop(p, nil)
			return ctx.Err()
		}
		sub, err := c.subscribe(nc, p)
		if err != nil {
			c.stop(p, nil)
			if ctx.Err() != nil {
				return ctx.Err()
			}
			return fmt.Errorf("subscribe %s: %w", c.cfg.Subject, err)
		}
		c.ready.Store(true)
		c.events.Emit(Subscribed{EventTime: c.events.Now(), Handler: c.name, Subject: c.cfg.Subject, Queue: c.cfg.QueueGroup})
		select {
		case <-ctx.Done():
			c.ready.Store(false)
			c.stop(p, sub)
			return ctx.Err()
		case <-gone:
			c.ready.Store(false)
			// The subscription died with its connection; what it had
			// pending in nats.go is lost with it (core NATS is at most
			// once).
			p.retireSub()
		}
	}
}

func (c *core) subscribe(nc *nats.Conn, p *pool) (*nats.Subscription, error) {
	var sub *nats.Subscription
	var err error
	lastErr := nc.LastError()
	if c.cfg.QueueGroup != "" {
		sub, err = nc.QueueSubscribe(c.cfg.Subject, c.cfg.QueueGroup, p.enqueue)
	} else {
		sub, err = nc.Subscribe(c.cfg.Subject, p.enqueue)
	}
	if err != nil {
		return nil, err
	}
	if err := sub.SetPendingLimits(c.cfg.PendingMsgs, int(c.cfg.PendingBytes)); err != nil {
		_ = sub.Unsubscribe()
		return nil, err
	}
	// A round trip: the server has the subscription (or refused it) when
	// Flush returns, so messages published after Subscribed reach it.
	if err := nc.FlushTimeout(subscribeTimeout); err == nil {
		if err := nc.LastError(); err != lastErr && refuses(err, c.cfg.Subject, c.cfg.QueueGroup) {
			_ = sub.Unsubscribe()
			return nil, err
		}
	}
	p.sub.Store(sub)
	return sub, nil
}

const subscribeTimeout = 5 * time.Second

// refuses reports whether err is the server refusing a subscription to
// subject in queue. nats.go reports it only as the connection's last error.
func refuses(err error, subject, queue string) bool {
	if !errors.Is(err, nats.ErrPermissionViolation) {
		return false
	}
	msg := err.Error()
	if !strings.Contains(msg, `Subscription to "`+subject+`"`) {
		return false
	}
	return queue == "" || strings.Contains(msg, `using queue "`+queue+`"`)
}

// stop drains the subscription, so that nothing new arrives and what
// nats.go holds is handled, then drains the pool, all within the grace
// period; it reports what was finished and what was abandoned.
func (c *core) stop(p *pool, sub *nats.Subscription) {
	start := time.Now()
	deadline := start.Add(grace(c.cfg.Restart.ShutdownTimeout))
	var abandoned uint64
	if sub != nil {
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
			if n, _, err := sub.Pending(); err == nil {
				abandoned += uint64(n)
				c.stats.dropped.Add(uint64(n))
			}
			_ = sub.Unsubscribe()
		}
		p.retireSub()
	}
	finished, queued := p.stop(deadline)
	c.events.Emit(Drained{EventTime: c.events.Now(), Handler: c.name, Subject: c.cfg.Subject,
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
