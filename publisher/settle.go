package publisher

import (
	"errors"
	"fmt"
	"strings"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/corral-go/corral/internal/jsapi"
)

// acked is nats.go's ack callback: it must not block.
func (p *Buffered) acked(snd *sending, m *nats.Msg, ack *jetstream.PubAck) {
	p.mu.Lock()
	e := p.takeLocked(snd, m)
	backlog := len(p.queue) > 0 || len(p.retries) > 0 || p.stopping
	p.mu.Unlock()
	if e == nil {
		return
	}
	p.settle(e, ack, nil)
	if backlog {
		p.wake() // room in the window for what waits, or a stop to finish
	}
}

// failed is nats.go's error callback: a final error settles the message,
// a failed expectation on a re-send has the send loop check whether the
// stream holds it already, any other error sends it again later.
func (p *Buffered) failed(snd *sending, m *nats.Msg, err error) {
	p.mu.Lock()
	e := p.takeLocked(snd, m)
	if e == nil {
		p.mu.Unlock()
		return
	}
	e.lastErr = err
	switch {
	case expectationFailed(err) && e.sends > 1: // perhaps stored by an earlier send
		if p.closed {
			p.mu.Unlock()
			p.undeliver(e)
			return
		}
		p.checks = append(p.checks, e)
		p.mu.Unlock()
	case final(err):
		p.mu.Unlock()
		p.settle(e, nil, err)
	default:
		e.noStream = errors.Is(err, jetstream.ErrNoStreamResponse)
		late := p.requeueLocked(e, err, errors.Is(err, nats.ErrDisconnected))
		p.mu.Unlock()
		p.after(e, late, err)
	}
	p.wake()
}

// final reports errors that sending again cannot mend. Others are retried
// up to MaxAttempts.
func final(err error) bool {
	var apiErr *jetstream.APIError
	if errors.As(err, &apiErr) {
		switch apiErr.ErrorCode {
		case jetstream.JSErrCodeStreamWrongLastSequence, jetstream.JSErrCodeStreamWrongLastSequenceConstant,
			jetstream.JSErrCodeStreamMessageExceedsMaximum, jetstream.JSErrCodeStreamNotFound,
			jetstream.JSErrCodeJetStreamNotEnabledForAccount,
			jsapi.CodeWrongLastMsgID, jsapi.CodeStreamMismatch:
			return true
		case jsapi.CodeResourcesExceeded: // clears when room is freed
			return false
		case jsapi.CodeStoreFailed: // final for a message the store cannot take
			return strings.Contains(strings.ToLower(apiErr.Description), "too large")
		}
		return apiErr.Code == 400 && apiErr.ErrorCode != 0
	}
	return errors.Is(err, nats.ErrPermissionViolation) || errors.Is(err, nats.ErrMaxPayload) ||
		errors.Is(err, jetstream.ErrInvalidJSAck) // something other than a stream answers
}

// asyncError settles, as failed, what is in flight on nc to a subject the
// server refused a publish to: nats.go reports that only here, and the
// publishes would otherwise time out and be sent again forever.
func (p *Buffered) asyncError(nc *nats.Conn, err error) {
	subj, ok := deniedSubject(err)
	if !ok {
		return
	}
	p.mu.Lock()
	var denied []*entry
	for m, e := range p.inflight {
		if e.msg.Subject == subj && e.sender != nil && e.sender.nc == nc {
			delete(p.inflight, m)
			e.sender = nil
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
// OnUndelivered), and takes it out of the spool.
func (p *Buffered) settle(e *entry, ack *jetstream.PubAck, err error) {
	if !p.release(e) {
		return
	}
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
	} else {
		p.stats.failed.Add(1)
		p.failedEvent(e, err)
		p.report(e, err)
	}
	e.future.settle(ack, err)
}

// undeliver ends e, not delivered by a stop: with a spool it stays there
// for the next start, without one it goes to OnUndelivered.
func (p *Buffered) undeliver(e *entry) {
	if !p.release(e) {
		return
	}
	if e.seg != nil {
		e.future.settle(nil, fmt.Errorf("%w: %w", ErrStopped, ErrSpooled))
		return
	}
	errs := []error{ErrStopped}
	if e.sent {
		errs = append(errs, ErrMaybeStored)
	}
	err := errors.Join(append(errs, e.lastErr)...)
	p.stats.undelivered.Add(1)
	p.report(e, err)
	e.future.settle(nil, err)
}

// release frees e's room, once: it reports whether e was still unsettled.
func (p *Buffered) release(e *entry) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if e.settled {
		return false
	}
	e.settled = true
	p.count--
	p.bytes -= e.size
	if p.waiting > 0 {
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
