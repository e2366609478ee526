package publisher

import (
	"errors"
	"slices"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/corral-go/corral/internal/jsapi"
)

// next takes the next thing to do: a message refused for an expectation,
// to look for in the stream, else the oldest retry that is due, else the
// oldest queued message, if the window has room. Otherwise it says how
// long until a retry is due, and whether nothing at all is left. What it
// takes is counted in taken until [Buffered.send], [Buffered.putBack] or
// [Buffered.finishTake].
func (p *Buffered) next() (e *entry, refused bool, wait time.Duration, idle bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	idle = p.count == 0
	if len(p.refused) > 0 {
		e = p.refused[0]
		p.refused = slices.Delete(p.refused, 0, 1)
		p.taken++
		return e, true, 0, false
	}
	if len(p.inflight) >= p.cfg.MaxInFlight || p.directSends > 0 {
		// A PublishSync caller is handing an older message to nats.go
		// (it wakes us when done): sending now could overtake it.
		return nil, false, 0, idle
	}
	now := time.Now()
	var soonest time.Time
	for i, r := range p.retries {
		if !r.due.After(now) {
			p.retries = slices.Delete(p.retries, i, i+1)
			p.taken++
			return r, false, 0, false
		}
		if soonest.IsZero() || r.due.Before(soonest) {
			soonest = r.due
		}
	}
	if len(p.queue) > 0 {
		e = p.queue[0]
		p.queue[0] = nil
		p.queue = p.queue[1:]
		p.taken++
		return e, false, 0, false
	}
	if !soonest.IsZero() {
		wait = soonest.Sub(now)
	}
	return nil, false, wait, idle
}

// directSessionLocked returns the session a PublishSync caller may hand
// its message to nats.go on itself, or nil: only while the send loop is
// connected, nothing older waits or is being handed over, and the window
// has room, or the message could overtake an older one.
func (p *Buffered) directSessionLocked() *session {
	if p.session == nil || len(p.queue) > 0 || len(p.retries) > 0 || p.taken > 0 ||
		len(p.inflight) >= p.cfg.MaxInFlight {
		return nil
	}
	return p.session
}

// sendDirectLocked hands e to nats.go on sess from the PublishSync
// caller's goroutine. It is called with p.mu held and releases it; while
// it runs, directSends holds the send loop back.
func (p *Buffered) sendDirectLocked(e *entry, sess *session) {
	p.taken++
	p.registerLocked(e, sess)
	p.directSends++
	p.mu.Unlock()
	p.send(e, sess)
	p.mu.Lock()
	p.directSends--
	p.mu.Unlock()
	p.wake()
}

// register puts e in flight on sess, before it is handed to nats.go.
func (p *Buffered) register(e *entry, sess *session) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.registerLocked(e, sess)
}

func (p *Buffered) registerLocked(e *entry, sess *session) {
	p.inflight[e.msg] = e
	e.session = sess
	e.sent = true // from here a stop cannot know whether nats.go sent it
	e.sends++
}

// send hands e, registered in flight on sess and counted in taken, to
// nats.go. It reports whether the connection is gone.
func (p *Buffered) send(e *entry, sess *session) (gone bool) {
	_, err := sess.js.PublishMsgAsync(e.msg)
	p.mu.Lock()
	p.taken--
	if err == nil {
		p.mu.Unlock()
		return false
	}
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

// putBack returns an entry taken by next, not sent, to its place.
func (p *Buffered) putBack(e *entry, refused bool) {
	p.mu.Lock()
	p.taken--
	if refused {
		p.refused = append(p.refused, e)
		p.mu.Unlock()
		return
	}
	outcome := p.requeueLocked(e, nil, true)
	p.mu.Unlock()
	p.settleUnqueued(e, outcome, nil)
}

// finishTake ends the take of an entry next returned that is settled
// without being handed to nats.go.
func (p *Buffered) finishTake() {
	p.mu.Lock()
	p.taken--
	p.mu.Unlock()
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

// takeInflightLocked finds the entry of m in flight on sess, and takes it
// out of flight.
func (p *Buffered) takeInflightLocked(sess *session, m *nats.Msg) *entry {
	e, ok := p.inflight[m]
	if !ok || e.session != sess {
		return nil
	}
	delete(p.inflight, m)
	e.session = nil
	return e
}
