package publisher

import (
	"errors"
	"fmt"
	"strings"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/corral-go/corral/internal/jsapi"
)

// handleAck is nats.go's ack callback for sends on sess: it settles the
// message, unless it is no longer in flight on sess. It must not block.
func (p *Buffered) handleAck(sess *session, m *nats.Msg, ack *jetstream.PubAck) {
	p.mu.Lock()
	e := p.takeInflightLocked(sess, m)
	released := e != nil && p.releaseLocked(e)
	backlog := len(p.queue) > 0 || len(p.retries) > 0 || p.stopping
	p.mu.Unlock()
	if !released {
		return
	}
	p.finish(e, ack, nil)
	if backlog {
		p.wake() // room in the window for what waits, or a stop to finish
	}
}

// handleError is nats.go's error callback for sends on sess: a final
// refusal settles the message, a failed expectation on a re-send has the
// send loop look whether the stream holds it already (resolve.go), any
// other error sends it again later (retry.go). A message no longer in
// flight on sess (sent again on a new connection) is left alone.
func (p *Buffered) handleError(sess *session, m *nats.Msg, err error) {
	p.mu.Lock()
	e := p.takeInflightLocked(sess, m)
	if e == nil {
		p.mu.Unlock()
		return
	}
	e.lastErr = err
	fin := final(err)
	switch {
	case jsapi.ExpectationFailed(err) && e.sends > 1: // perhaps stored by an earlier send
		if p.closed {
			p.mu.Unlock()
			p.undeliver(e)
			return
		}
		p.refused = append(p.refused, e)
		p.mu.Unlock()
	case fin != nil:
		p.mu.Unlock()
		p.settle(e, nil, fin)
	default:
		e.noStream = errors.Is(err, jetstream.ErrNoStreamResponse)
		outcome := p.requeueLocked(e, err, errors.Is(err, nats.ErrDisconnected))
		p.mu.Unlock()
		p.settleUnqueued(e, outcome, err)
	}
	p.wake()
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

// settleDenied settles, as failed, what is in flight on nc to a subject the
// server refused a publish to: nats.go reports that only here, and the
// publishes would otherwise time out and be sent again forever.
func (p *Buffered) settleDenied(nc *nats.Conn, err error) {
	subj, ok := deniedSubject(err)
	if !ok {
		return
	}
	p.mu.Lock()
	var denied []*entry
	for m, e := range p.inflight {
		if e.msg.Subject == subj && e.session != nil && e.session.nc == nc {
			delete(p.inflight, m)
			e.session = nil
			denied = append(denied, e)
		}
	}
	p.mu.Unlock()
	for _, e := range denied {
		p.settle(e, nil, err)
	}
	if len(denied) > 0 {
		p.wake()
	}
}

// deniedSubject returns the subject of a publish permission violation:
// nats: permissions violation: Permissions Violation for Publish to "s".
func deniedSubject(err error) (string, bool) {
	if !errors.Is(err, nats.ErrPermissionViolation) {
		return "", false
	}
	_, rest, ok := strings.Cut(err.Error(), `for Publish to "`)
	if !ok {
		return "", false
	}
	subj, _, ok := strings.Cut(rest, `"`)
	return subj, ok && subj != ""
}

// settle ends e with its ack, or with a final error (then e also goes to
// OnUndelivered), and takes it out of the spool. Only the first settle or
// undeliver of e counts: a late one does nothing.
func (p *Buffered) settle(e *entry, ack *jetstream.PubAck, err error) {
	if p.release(e) {
		p.finish(e, ack, err)
	}
}

// finish is the rest of settle, once release has freed e's room.
func (p *Buffered) finish(e *entry, ack *jetstream.PubAck, err error) {
	if e.seg != nil {
		if serr := e.seg.sp.settle(e); serr != nil {
			p.events.Emit(SpoolError{EventTime: p.events.Stamp(), Err: serr})
		}
	}
	if err == nil {
		p.stats.acked.Add(1)
		if ack.Duplicate {
			p.stats.duplicates.Add(1)
		}
	} else if jsapi.WrongLastSequence(err) && !e.recovered {
		// The answer to a compare-and-set, for its caller alone.
		p.stats.refused.Add(1)
	} else {
		p.stats.failed.Add(1)
		p.failedEvent(e, err)
		p.report(e, err)
	}
	e.future.settle(ack, err)
}

// undeliver ends e, not delivered by a stop (or returned by nats.go after
// a stop collected what was left): with a spool it stays there for the
// next start, without one it goes to OnUndelivered.
func (p *Buffered) undeliver(e *entry) {
	if !p.release(e) {
		return
	}
	if e.seg != nil {
		e.future.settle(nil, both{ErrStopped, ErrSpooled})
		return
	}
	var err error = ErrStopped
	if e.sent {
		err = both{ErrStopped, ErrMaybeStored}
	}
	if e.lastErr != nil {
		err = fmt.Errorf("%w: %w", err, e.lastErr)
	}
	p.stats.undelivered.Add(1)
	p.report(e, err)
	e.future.settle(nil, err)
}

// settleUnqueued settles e when requeueLocked did not put it back in
// line: as failed once it is out of attempts, as undelivered once a stop
// has collected what was left.
func (p *Buffered) settleUnqueued(e *entry, r requeueOutcome, err error) {
	switch r {
	case gaveUp:
		p.settle(e, nil, fmt.Errorf("%w (%d): %w", ErrGaveUp, e.attempts, err))
	case tooLate:
		p.undeliver(e)
	}
}

// release frees e's room, once: it reports whether e was still unsettled.
func (p *Buffered) release(e *entry) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.releaseLocked(e)
}

// releaseLocked is release, with p.mu held.
func (p *Buffered) releaseLocked(e *entry) bool {
	if e.settled {
		return false
	}
	e.settled = true
	p.count--
	p.bytes -= e.size
	if p.waiters > 0 {
		close(p.space)
		p.space = make(chan struct{})
	}
	return true
}

// report hands a message that was not stored to OnUndelivered, with its
// headers (its Nats-Msg-Id among them).
func (p *Buffered) report(e *entry, err error) {
	if p.cfg.OnUndelivered == nil {
		return
	}
	p.cfg.OnUndelivered(&nats.Msg{Subject: e.msg.Subject, Header: copyHeader(e.msg.Header),
		Data: append([]byte(nil), e.msg.Data...)}, err)
}
