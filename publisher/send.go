package publisher

import (
	"errors"
	"slices"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// sending is what the callbacks of one JetStream context need to know
// which sends are theirs: a message sent again on a new connection must
// not be settled by a late callback about its first send.
type sending struct {
	nc *nats.Conn
	js jetstream.JetStream
}

// next takes the next thing to do: a message to check against the stream,
// else the oldest retry that is due, else the oldest queued message, if
// the window has room. Otherwise it says how long until a retry is due,
// and whether nothing at all is left.
func (p *Buffered) next() (e *entry, check bool, wait time.Duration, idle bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	idle = p.count == 0
	if len(p.checks) > 0 {
		e = p.checks[0]
		p.checks = slices.Delete(p.checks, 0, 1)
		p.handing++
		return e, true, 0, false
	}
	if len(p.inflight) >= p.cfg.MaxInFlight || p.direct > 0 {
		// A PublishSync caller is handing an older message to nats.go
		// (it wakes us when done): sending now could overtake it.
		return nil, false, 0, idle
	}
	now := time.Now()
	var soonest time.Time
	for i, r := range p.retries {
		if !r.due.After(now) {
			p.retries = slices.Delete(p.retries, i, i+1)
			p.handing++
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
		p.handing++
		return e, false, 0, false
	}
	if !soonest.IsZero() {
		wait = soonest.Sub(now)
	}
	return nil, false, wait, idle
}

func (p *Buffered) register(e *entry, snd *sending) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.inflight[e.msg] = e
	e.sender = snd
	e.sent = true // from here a stop cannot know whether nats.go sent it
	e.sends++
}

// send hands e, registered in flight on snd and counted in handing, to
// nats.go. It reports whether the connection is gone.
func (p *Buffered) send(e *entry, snd *sending) (gone bool) {
	_, err := snd.js.PublishMsgAsync(e.msg)
	p.mu.Lock()
	p.handing--
	if err == nil {
		p.mu.Unlock()
		return false
	}
	if !p.unregisterLocked(e, snd) {
		p.mu.Unlock()
		return false // settled by a callback already
	}
	e.lastErr = err
	switch {
	case errors.Is(err, nats.ErrConnectionClosed):
		late := p.requeueLocked(e, err, true)
		p.mu.Unlock()
		p.after(e, late, nil)
		p.wake() // the loop finds the connection closed
		return true
	case errors.Is(err, nats.ErrMaxPayload), errors.Is(err, nats.ErrBadSubject):
		p.mu.Unlock()
		p.settle(e, nil, err)
	default:
		late := p.requeueLocked(e, err, false)
		p.mu.Unlock()
		p.after(e, late, err)
	}
	p.wake()
	return false
}

// putBack returns an entry taken by next, not sent, to its place.
func (p *Buffered) putBack(e *entry, check bool) {
	p.mu.Lock()
	p.handing--
	if check {
		p.checks = append(p.checks, e)
		p.mu.Unlock()
		return
	}
	late := p.requeueLocked(e, nil, true)
	p.mu.Unlock()
	p.after(e, late, nil)
}

func (p *Buffered) unhand() {
	p.mu.Lock()
	p.handing--
	p.mu.Unlock()
}

// unregisterLocked takes e out of flight, if it still is in flight on snd.
func (p *Buffered) unregisterLocked(e *entry, snd *sending) bool {
	if cur, ok := p.inflight[e.msg]; !ok || cur != e || e.sender != snd {
		return false
	}
	delete(p.inflight, e.msg)
	e.sender = nil
	return true
}

// takeLocked finds the in-flight entry of m sent by snd, and takes it out
// of flight.
func (p *Buffered) takeLocked(snd *sending, m *nats.Msg) *entry {
	e, ok := p.inflight[m]
	if !ok || e.sender != snd {
		return nil
	}
	delete(p.inflight, m)
	e.sender = nil
	return e
}
