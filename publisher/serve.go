package publisher

import (
	"context"
	"errors"
	"fmt"

	"github.com/nats-io/nats.go"

	"github.com/corral-go/corral/internal/jsapi"
)

// Serve sends what is buffered, on the current connection of the
// [connection.Source], until ctx ends; then it flushes until the restart
// policy's shutdown timeout, reports what was not delivered and returns
// ctx.Err(). When the connection is replaced, what was in flight is sent
// again on the new one. Serve declares the configured streams on every
// connection before it sends. It returns an error wrapping
// nats.ErrConnectionClosed if the connection it is given was closed for
// good, and [ErrServing] if the publisher is being served already; it may
// be called again after it returned.
func (p *Buffered) Serve(ctx context.Context) error {
	if err := p.reopen(); err != nil {
		return err
	}
	defer func() {
		p.mu.Lock()
		p.serving = false
		p.mu.Unlock()
	}()
	defer p.src.OnAsyncError(p.settleDenied)()
	for {
		nc, gone, err := p.src.Conn(ctx)
		if err != nil {
			if ctx.Err() != nil {
				return p.stop(ctx, nil)
			}
			return fmt.Errorf("publisher: %w", err)
		}
		if nc.IsClosed() {
			// A connection the application closed (connection.Fixed): it
			// never comes back. Fail, so the tree restarts us with backoff.
			return fmt.Errorf("publisher: %w", nats.ErrConnectionClosed)
		}
		sess, err := p.newSession(nc, gone)
		if err != nil {
			return err
		}
		err = p.declareStreams(ctx, sess)
		if ctx.Err() != nil {
			return p.stop(ctx, nil)
		}
		p.declaredStreams(err)
		if err != nil {
			return err
		}
		p.maxPayload.Store(nc.MaxPayload())
		err = p.sendLoop(ctx, sess)
		switch {
		case errors.Is(err, jsapi.ErrConnGone):
			p.requeueInflight()
		case ctx.Err() != nil:
			return p.stop(ctx, sess)
		default:
			return err
		}
	}
}

// reopen readies a publisher served again after a stop: it opens the
// spool again, queueing what it holds, and accepts messages again.
func (p *Buffered) reopen() error {
	p.mu.Lock()
	if p.serving {
		p.mu.Unlock()
		return ErrServing
	}
	var refused []*entry
	if p.stopping {
		var err error
		if refused, err = p.recoverSpool(); err != nil {
			p.mu.Unlock()
			return err
		}
		p.stopping, p.closed = false, false
	}
	p.serving = true
	p.mu.Unlock()
	p.failRecovered(refused)
	return nil
}
