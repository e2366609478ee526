package publisher

import (
	"context"
	"errors"
	"fmt"
	"time"

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

// sendLoop sends due messages within the in-flight window until ctx ends
// or the session's connection is gone; while stopping it returns once
// nothing is left.
func (p *Buffered) sendLoop(ctx context.Context, sess *session) error {
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	p.setSession(sess)
	defer p.setSession(nil)
	for {
		e, refused, wait, idle := p.next()
		if e != nil {
			if !sess.nc.IsConnected() {
				p.setSession(nil)
				// Paused: nats.go would hold it in its reconnect buffer and
				// time it out; keep it here until the connection is back.
				p.putBack(e, refused)
				if err := p.waitConnected(ctx, sess); err != nil {
					return err
				}
				p.setSession(sess)
				continue
			}
			switch {
			case refused:
				p.resolve(ctx, sess, e)
			case e.noStream && p.noStreamStores(ctx, sess.js, e.msg.Subject):
				p.finishTake()
				p.settle(e, nil, ErrNoStream)
			default:
				p.register(e, sess)
				if p.send(e, sess) {
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
		case <-sess.gone:
			return jsapi.ErrConnGone
		case <-p.work:
		case <-timer.C:
		}
	}
}

// waitConnected waits for the session's connection to be connected again.
func (p *Buffered) waitConnected(ctx context.Context, sess *session) error {
	for {
		_, changed := p.src.Watch()
		if sess.nc.IsConnected() {
			return nil
		}
		if sess.nc.IsClosed() {
			return jsapi.ErrConnGone
		}
		// A connection.Fixed cannot hear its connection's first connect:
		// look again now and then.
		poll := time.NewTimer(100 * time.Millisecond)
		select {
		case <-ctx.Done():
			poll.Stop()
			return ctx.Err()
		case <-sess.gone:
			poll.Stop()
			return jsapi.ErrConnGone
		case <-changed:
			poll.Stop()
		case <-poll.C:
		}
	}
}

// setSession tells PublishSync whether it may send directly, on sess,
// and Watch callers whether the publisher is ready.
func (p *Buffered) setSession(sess *session) {
	p.mu.Lock()
	if (sess == nil) != (p.session == nil) {
		close(p.readyChange)
		p.readyChange = make(chan struct{})
	}
	p.session = sess
	p.mu.Unlock()
}

func (p *Buffered) isStopping() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.stopping
}
