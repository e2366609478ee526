package publisher

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/corral-go/corral/internal/jsapi"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

const (
	// lookupTimeout bounds the lookups the send loop makes between sends,
	// so that they hold up what waits behind them only briefly.
	lookupTimeout = 2 * time.Second
)

// sending is what the callbacks of one JetStream context need to know
// which sends are theirs: a message sent again on a new connection must
// not be settled by a late callback about its first send.
type sending struct {
	nc *nats.Conn
	js jetstream.JetStream
}

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

func (p *Buffered) unhand() {
	p.mu.Lock()
	p.handing--
	p.mu.Unlock()
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

func (p *Buffered) register(e *entry, snd *sending) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.inflight[e.msg] = e
	e.sender = snd
	e.sent = true // from here a stop cannot know whether nats.go sent it
	e.sends++
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

// requeue outcomes: what the caller does with e once p.mu is released.
type requeued int

const (
	queued  requeued = iota // back in line
	gaveUp                  // out of attempts: settle as failed
	tooLate                 // the publisher stopped meanwhile: undeliver
)

// requeueLocked puts e, out of flight, back in line in accept order: due
// at once when the connection was lost (lost), which costs no attempt;
// after a growing wait otherwise. Once a stop has collected what is left,
// or e is out of attempts, it leaves e to the caller.
func (p *Buffered) requeueLocked(e *entry, err error, lost bool) requeued {
	if err != nil {
		e.lastErr = err
	}
	if p.closed {
		return tooLate
	}
	e.due = time.Now()
	if !lost {
		p.stats.retried.Add(1)
		e.attempts++
		if p.cfg.MaxAttempts > 0 && e.attempts >= p.cfg.MaxAttempts {
			return gaveUp
		}
		d := p.cfg.RetryWait << min(e.attempts-1, 30)
		if d <= 0 || d > p.cfg.MaxRetryWait {
			d = p.cfg.MaxRetryWait
		}
		e.due = e.due.Add(d)
	} else if err != nil {
		p.stats.retried.Add(1)
	}
	i, _ := slices.BinarySearchFunc(p.retries, e.order, func(r *entry, o uint64) int { return cmp.Compare(r.order, o) })
	p.retries = slices.Insert(p.retries, i, e)
	return queued
}

// after finishes what requeueLocked left to the caller.
func (p *Buffered) after(e *entry, r requeued, err error) {
	switch r {
	case gaveUp:
		p.settle(e, nil, fmt.Errorf("%w (%d): %w", ErrGaveUp, e.attempts, err))
	case tooLate:
		p.undeliver(e)
	}
}

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

// resendInflight queues everything in flight on a connection that is
// gone.
func (p *Buffered) resendInflight() {
	p.mu.Lock()
	var late []*entry
	for m, e := range p.inflight {
		delete(p.inflight, m)
		e.sender = nil
		if p.requeueLocked(e, jsapi.ErrConnGone, true) == tooLate {
			late = append(late, e)
		}
	}
	p.mu.Unlock()
	for _, e := range late {
		p.undeliver(e)
	}
}

// expectationFailed reports errors of a message whose expected last
// sequence or Msg-Id did not match. A re-send of a message the stream
// stored already fails so as well: the server checks expectations before
// Msg-Id duplicates.
func expectationFailed(err error) bool {
	var apiErr *jetstream.APIError
	if !errors.As(err, &apiErr) {
		return false
	}
	switch apiErr.ErrorCode {
	case jetstream.JSErrCodeStreamWrongLastSequence, jetstream.JSErrCodeStreamWrongLastSequenceConstant,
		jsapi.CodeWrongLastMsgID:
		return true
	}
	return false
}

// resolve settles e, refused for an expectation: as a duplicate when the
// stream holds a message with its Msg-Id where e would be, as failed
// otherwise.
func (p *Buffered) resolve(ctx context.Context, snd *sending, e *entry) {
	defer p.unhand()
	lctx, cancel := context.WithTimeout(ctx, lookupTimeout)
	defer cancel()
	ack, err := storedAlready(lctx, snd.js, e.msg)
	switch {
	case ack != nil:
		p.settle(e, ack, nil)
	case err != nil:
		p.settle(e, nil, errors.Join(e.lastErr, fmt.Errorf("publisher: looking for the message in the stream: %w", err)))
	default:
		p.settle(e, nil, e.lastErr)
	}
}

// storedAlready looks for m where its expectation says it would be: the
// message after the expected last sequence (on m's subject, for a
// per-subject one), or the last message on m's subject. It returns an ack
// for it if it carries m's Msg-Id.
func storedAlready(ctx context.Context, js jetstream.JetStream, m *nats.Msg) (*jetstream.PubAck, error) {
	name, err := js.StreamNameBySubject(ctx, m.Subject)
	if err != nil {
		return nil, err
	}
	s, err := js.Stream(ctx, name)
	if err != nil {
		return nil, err
	}
	var raw *jetstream.RawStreamMsg
	switch h := m.Header; {
	case h.Get(jetstream.ExpectedLastSeqHeader) != "":
		seq, perr := strconv.ParseUint(h.Get(jetstream.ExpectedLastSeqHeader), 10, 64)
		if perr != nil {
			return nil, perr
		}
		raw, err = s.GetMsg(ctx, seq+1)
	case h.Get(jetstream.ExpectedLastSubjSeqHeader) != "":
		seq, perr := strconv.ParseUint(h.Get(jetstream.ExpectedLastSubjSeqHeader), 10, 64)
		if perr != nil {
			return nil, perr
		}
		raw, err = s.GetMsg(ctx, seq+1, jetstream.WithGetMsgSubject(m.Subject))
	default:
		raw, err = s.GetLastMsgForSubject(ctx, m.Subject)
	}
	if errors.Is(err, jetstream.ErrMsgNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	if id := m.Header.Get(jetstream.MsgIDHeader); id == "" || raw.Header.Get(jetstream.MsgIDHeader) != id {
		return nil, nil
	}
	return &jetstream.PubAck{Stream: name, Sequence: raw.Sequence, Duplicate: true}, nil
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

// noStreamFor reports whether no stream stores subject, remembering the
// answer for a second so that a burst does not ask for every message.
func (p *Buffered) noStreamFor(ctx context.Context, js jetstream.JetStream, subject string) bool {
	p.noStreamMu.Lock()
	at, known := p.noStream[subject]
	p.noStreamMu.Unlock()
	if known && time.Since(at) < time.Second {
		return true
	}
	lctx, cancel := context.WithTimeout(ctx, lookupTimeout)
	defer cancel()
	_, err := js.StreamNameBySubject(lctx, subject)
	missing := errors.Is(err, jetstream.ErrStreamNotFound)
	p.noStreamMu.Lock()
	if missing {
		p.noStream[subject] = time.Now()
	} else {
		delete(p.noStream, subject)
	}
	p.noStreamMu.Unlock()
	return missing
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

// flushOn is the connection a stop flushes on.
type flushOn struct {
	nc   *nats.Conn
	snd  *sending
	gone <-chan struct{}
}

// stop refuses new messages, flushes what is buffered until the shutdown
// timeout, then reports every message not delivered: with a spool they
// stay for the next start, without one they go to OnUndelivered. Entries
// that nats.go's callbacks return after that are reported the same way.
func (p *Buffered) stop(ctx context.Context, on *flushOn) error {
	p.mu.Lock()
	p.stopping = true
	close(p.space) // waiting publishers see that they are refused
	p.space = make(chan struct{})
	p.mu.Unlock()

	grace := p.cfg.Restart.ShutdownTimeout - min(p.cfg.Restart.ShutdownTimeout/10, time.Second)
	flushCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), grace)
	defer cancel()
	if on != nil {
		_ = p.run(flushCtx, on.nc, on.snd, on.gone)
	}

	p.mu.Lock()
	p.closed = true
	left := slices.Concat(p.queue, p.retries, p.checks)
	for _, e := range p.inflight {
		left = append(left, e)
	}
	p.queue, p.retries, p.checks, p.inflight = nil, nil, nil, map[*nats.Msg]*entry{}
	sp := p.spool
	p.spool = nil
	p.mu.Unlock()
	slices.SortFunc(left, func(a, b *entry) int { return cmp.Compare(a.order, b.order) })
	for _, e := range left {
		p.undeliver(e)
	}
	if sp != nil {
		sp.close()
	}
	p.events.Emit(Stopped{EventTime: p.events.Stamp(), Undelivered: len(left), Spooled: sp != nil})
	return ctx.Err()
}

// reopen readies a publisher served again after a stop.
func (p *Buffered) reopen() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.serving {
		return ErrServing
	}
	if p.stopping {
		if err := p.openSpool(); err != nil {
			return err
		}
		p.stopping, p.closed = false, false
	}
	p.serving = true
	return nil
}
