package publisher

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/corral-go/corral/internal/jsapi"
)

// Serve sends what is buffered, on the current connection, until ctx
// ends; then it flushes until the shutdown timeout and reports what was
// not delivered. When the connection is replaced, what was in flight is
// sent again on the new one.
func (p *Buffered) Serve(ctx context.Context) error {
	if err := p.reopen(); err != nil {
		return err
	}
	defer func() {
		p.mu.Lock()
		p.serving = false
		p.mu.Unlock()
	}()
	defer p.src.OnAsyncError(p.asyncError)()
	for {
		nc, gone, err := p.src.Conn(ctx)
		if err != nil {
			if ctx.Err() != nil {
				return p.stop(ctx, nil)
			}
			return fmt.Errorf("publisher: connection: %w", err)
		}
		if nc.IsClosed() {
			// A connection the application closed (connection.Fixed): it
			// never comes back. Fail, so the tree restarts us with backoff.
			return fmt.Errorf("publisher: %w", nats.ErrConnectionClosed)
		}
		snd := &sending{nc: nc}
		js, err := jetstream.New(nc,
			jetstream.WithPublishAsyncAckHandler(func(js jetstream.JetStream, m *nats.Msg, ack *jetstream.PubAck) {
				p.acked(snd, m, ack)
			}),
			jetstream.WithPublishAsyncErrHandler(func(js jetstream.JetStream, m *nats.Msg, err error) {
				p.failed(snd, m, err)
			}),
			jetstream.WithPublishAsyncTimeout(p.cfg.AckTimeout),
			// Our window bounds what is in flight; nats.go's must never stall.
			jetstream.WithPublishAsyncMaxPending(2*p.cfg.MaxInFlight+1),
		)
		if err != nil {
			return fmt.Errorf("publisher: jetstream: %w", err)
		}
		snd.js = js
		if err := p.declare(ctx, js); err != nil {
			if ctx.Err() != nil {
				return p.stop(ctx, nil)
			}
			return err
		}
		p.maxPayload.Store(nc.MaxPayload())
		err = p.run(ctx, nc, snd, gone)
		switch {
		case errors.Is(err, jsapi.ErrConnGone):
			p.resendInflight()
		case ctx.Err() != nil:
			return p.stop(ctx, &flushOn{nc: nc, snd: snd, gone: gone})
		default:
			return err
		}
	}
}

// declare creates or updates the configured streams.
func (p *Buffered) declare(ctx context.Context, js jetstream.JetStream) error {
	for name, sc := range p.cfg.Streams {
		dctx, cancel := context.WithTimeout(ctx, jsapi.Timeout)
		_, err := sc.Declare(dctx, js, name)
		cancel()
		if err != nil {
			return fmt.Errorf("publisher: declare stream %q: %w", name, err)
		}
	}
	return nil
}

// run sends due messages within the in-flight window until ctx ends or
// the connection is gone; while stopping it returns once nothing is left.
func (p *Buffered) run(ctx context.Context, nc *nats.Conn, snd *sending, gone <-chan struct{}) error {
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	p.setCurrent(snd)
	defer p.setCurrent(nil)
	for {
		e, check, wait, idle := p.next()
		if e != nil {
			if !nc.IsConnected() {
				p.setCurrent(nil)
				// Paused: nats.go would hold it in its reconnect buffer and
				// time it out; keep it here until the connection is back.
				p.putBack(e, check)
				if err := p.waitConnected(ctx, nc, gone); err != nil {
					return err
				}
				p.setCurrent(snd)
				continue
			}
			switch {
			case check:
				p.resolve(ctx, snd, e)
			case e.noStream && p.noStreamFor(ctx, snd.js, e.msg.Subject):
				p.unhand()
				p.settle(e, nil, ErrNoStream)
			default:
				p.register(e, snd)
				if p.send(e, snd) {
					return jsapi.ErrConnGone
				}
			}
			continue
		}
		if idle && p.isStopping() {
			return nil
		}
		if wait <= 0 {
			wait = time.Hour
		}
		timer.Reset(wait)
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-gone:
			return jsapi.ErrConnGone
		case <-p.work:
		case <-timer.C:
		}
	}
}

// waitConnected waits for nc to be connected again.
func (p *Buffered) waitConnected(ctx context.Context, nc *nats.Conn, gone <-chan struct{}) error {
	for {
		_, changed := p.src.Watch()
		if nc.IsConnected() {
			return nil
		}
		if nc.IsClosed() {
			return jsapi.ErrConnGone
		}
		// A connection.Fixed cannot hear its connection's first connect:
		// look again now and then.
		poll := time.NewTimer(100 * time.Millisecond)
		select {
		case <-ctx.Done():
			poll.Stop()
			return ctx.Err()
		case <-gone:
			poll.Stop()
			return jsapi.ErrConnGone
		case <-changed:
			poll.Stop()
		case <-poll.C:
		}
	}
}

// setCurrent tells PublishSync whether it may send directly, on snd.
func (p *Buffered) setCurrent(snd *sending) {
	p.mu.Lock()
	p.current = snd
	p.mu.Unlock()
}

func (p *Buffered) isStopping() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.stopping
}
