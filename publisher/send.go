package publisher

import (
	"errors"

	"github.com/nats-io/nats.go"

	"github.com/corral-go/corral/internal/jsapi"
)

// claimDirectLocked registers e, just admitted, in flight for its
// PublishSync caller to hand to nats.go itself ([Buffered.sendDirect]),
// and returns the session to send it on; or nil, when the send loop must
// send it: only while the loop is connected, nothing older waits or is
// being handed over, and the window has room, or e could overtake an
// older message. Until sendDirect returns, directSends holds the send
// loop back.
func (p *Buffered) claimDirectLocked(e *entry) *session {
	sess := p.session
	if sess == nil || len(p.queue) > 0 || len(p.retries) > 0 || p.taken > 0 ||
		len(p.inflight) >= p.cfg.MaxInFlight {
		return nil
	}
	p.taken++
	p.directSends++
	p.registerLocked(e, sess)
	return sess
}

// sendDirect hands e, which claimDirectLocked registered in flight on
// sess, to nats.go from the PublishSync caller's goroutine, and then no
// longer holds the send loop back; the caller wakes it.
func (p *Buffered) sendDirect(e *entry, sess *session) {
	batch := [1]*entry{e}
	p.send(batch[:], sess)
	p.mu.Lock()
	p.directSends--
	p.mu.Unlock()
}

// register puts the entries of batch in flight on sess, before they are
// handed to nats.go.
func (p *Buffered) register(batch []*entry, sess *session) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, e := range batch {
		p.registerLocked(e, sess)
	}
}

// registerLocked is register, with p.mu held.
func (p *Buffered) registerLocked(e *entry, sess *session) {
	p.inflight[e.msg] = e
	e.session = sess
	e.sent = true // from here a stop cannot know whether nats.go sent it
	e.sends++
}

// unregisterLocked takes e out of flight, if it still is in flight on sess.
func (p *Buffered) unregisterLocked(e *entry, sess *session) bool {
	if cur, ok := p.inflight[e.msg]; !ok || cur != e || e.session != sess {
		return false
	}
	delete(p.inflight, e.msg)
	e.session = nil
	return true
}

// send hands the entries of batch, registered in flight on sess and
// counted in taken, to nats.go, in order. It reports whether the
// connection is gone.
func (p *Buffered) send(batch []*entry, sess *session) (gone bool) {
	var failed []error
	for i, e := range batch {
		if _, err := sess.js.PublishMsgAsync(e.msg); err != nil {
			if failed == nil {
				failed = make([]error, len(batch))
			}
			failed[i] = err
		}
	}
	p.mu.Lock()
	p.taken -= len(batch)
	p.mu.Unlock()
	for i, err := range failed {
		if err != nil && p.sendFailed(batch[i], sess, err) {
			gone = true
		}
	}
	return gone
}

// sendFailed ends the send of e on sess, which nats.go refused with err:
// it is sent again, or settled as failed when err is final. It reports
// whether the connection is gone.
func (p *Buffered) sendFailed(e *entry, sess *session, err error) (gone bool) {
	p.mu.Lock()
	if !p.unregisterLocked(e, sess) {
		p.mu.Unlock()
		return false // settled by a callback already
	}
	e.lastErr = err
	switch {
	case errors.Is(err, nats.ErrConnectionClosed):
		outcome := p.requeueLocked(e, err, true)
		p.mu.Unlock()
		p.settleUnqueued(e, outcome, nil)
		p.wake() // the loop finds the connection closed
		return true
	case errors.Is(err, nats.ErrMaxPayload), errors.Is(err, nats.ErrBadSubject), errors.Is(err, nats.ErrBadHeaderMsg):
		p.mu.Unlock()
		p.settle(e, nil, err)
	default:
		outcome := p.requeueLocked(e, err, false)
		p.mu.Unlock()
		p.settleUnqueued(e, outcome, err)
	}
	p.wake()
	return false
}

// requeueInflight puts everything in flight on a connection that is gone
// back in line, to be sent again on the next one.
func (p *Buffered) requeueInflight() {
	p.mu.Lock()
	var late []*entry // returned after a stop collected what was left
	for m, e := range p.inflight {
		delete(p.inflight, m)
		e.session = nil
		if p.requeueLocked(e, jsapi.ErrConnGone, true) == tooLate {
			late = append(late, e)
		}
	}
	p.mu.Unlock()
	for _, e := range late {
		p.undeliver(e)
	}
}
