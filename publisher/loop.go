package publisher

import (
	"context"
	"time"

	"github.com/corral-go/corral/internal/jsapi"
)

// sendLoop sends due messages within the in-flight window until ctx ends
// or the session's connection is gone; while stopping it returns once
// nothing is left.
func (p *Buffered) sendLoop(ctx context.Context, sess *session) error {
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	batch := make([]*entry, 0, sendBatch)
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
				p.finishTake()
			case e.noStream && p.noStreamStores(ctx, sess.js, e.msg.Subject):
				p.finishTake()
				p.settle(e, nil, ErrNoStream)
			default:
				batch = p.takeMore(append(batch[:0], e))
				p.register(batch, sess)
				if p.send(batch, sess) {
					return jsapi.ErrConnGone
				}
				clear(batch)
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
		_, changed := p.src.Observe()
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
