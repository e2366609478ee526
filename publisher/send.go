package publisher

import (
	"context"
	"errors"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/corral-go/corral/connection"
)

// errConnGone means the connection closed for good.
var errConnGone = errors.New("publisher: connection replaced")

// apiTimeout bounds stream declarations and lookups.
const apiTimeout = 10 * time.Second

// sending is what the callbacks of one JetStream context need to know
// which sends are theirs: a message sent again on a new connection must
// not be settled by a late callback about its first send.
type sending struct{ js jetstream.JetStream }

// Serve sends what is buffered, on the current connection, until ctx
// ends; then it flushes until the shutdown timeout and reports what was
// not delivered. When the connection is replaced, what was in flight is
// sent again on the new one.
func (p *Buffered) Serve(ctx context.Context) error {
	if err := p.reopen(); err != nil {
		return err
	}
	for {
		nc, gone, err := p.conns.Conn(ctx)
		if err != nil {
			if ctx.Err() != nil {
				return p.stop(ctx, nil)
			}
			return err
		}
		snd := &sending{}
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
			return err
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
		case errors.Is(err, errConnGone):
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
		dctx, cancel := context.WithTimeout(ctx, apiTimeout)
		_, err := sc.Declare(dctx, js, name)
		cancel()
		if err != nil {
			return err
		}
	}
	return nil
}

// run sends due messages within the in-flight window until ctx ends or
// the connection is gone; while stopping it returns once nothing is left.
func (p *Buffered) run(ctx context.Context, nc *nats.Conn, snd *sending, gone <-chan struct{}) error {
	var watch <-chan struct{}
	w, watching := p.conns.(interface {
		Watch() (connection.Status, <-chan struct{})
	})
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	p.setCurrent(snd)
	defer p.setCurrent(nil)
	for {
		e, wait, idle := p.next()
		if e != nil {
			if !nc.IsConnected() {
				p.setCurrent(nil)
				// Paused: nats.go would hold it in its reconnect buffer and
				// time it out; keep it here until the connection is back.
				p.unhand()
				p.putBack(e)
				if watching {
					_, watch = w.Watch()
				}
				if err := p.waitConnected(ctx, nc, gone, watch); err != nil {
					return err
				}
				p.setCurrent(snd)
				continue
			}
			if e.noStream && p.streamMissing(ctx, snd.js, e.msg.Subject) {
				p.unhand()
				p.settle(e, nil, ErrNoStream)
				continue
			}
			p.register(e, snd)
			if p.send(e, snd) {
				return errConnGone
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
			return errConnGone
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
	p.mu.Unlock()
	if err == nil || !p.unregister(e, snd) {
		return false // sent, or settled by a callback already
	}
	switch {
	case errors.Is(err, nats.ErrConnectionClosed):
		p.putBack(e)
		return true
	case errors.Is(err, nats.ErrMaxPayload), errors.Is(err, nats.ErrBadSubject):
		p.settle(e, nil, err)
	default:
		p.retry(e, err)
	}
	p.wake()
	return false
}

// sendSync publishes e, registered in flight on snd and counted in
// handing, and waits for its ack; a failure that is not final leaves e to
// the send loop.
func (p *Buffered) sendSync(ctx context.Context, e *entry, snd *sending) {
	// Without a deadline on ctx, nats.go bounds the wait by its default
	// timeout.
	ack, err := snd.js.PublishMsg(ctx, e.msg)
	p.mu.Lock()
	p.handing--
	p.mu.Unlock()
	if !p.unregister(e, snd) {
		return // the connection went meanwhile: e was queued to be sent again
	}
	switch {
	case err == nil:
		p.settle(e, ack, nil)
	case final(err):
		p.settle(e, nil, err)
	default:
		e.noStream = errors.Is(err, jetstream.ErrNoStreamResponse)
		p.retry(e, err)
		p.wake()
	}
}

// waitConnected waits for nc to be connected again.
func (p *Buffered) waitConnected(ctx context.Context, nc *nats.Conn, gone, watch <-chan struct{}) error {
	for !nc.IsConnected() {
		if nc.IsClosed() {
			return errConnGone
		}
		poll := time.NewTimer(20 * time.Millisecond) // when there is nothing to watch
		if watch != nil {
			poll.Stop()
		}
		select {
		case <-ctx.Done():
			poll.Stop()
			return ctx.Err()
		case <-gone:
			poll.Stop()
			return errConnGone
		case <-watch:
			watch = nil
			if w, ok := p.conns.(interface {
				Watch() (connection.Status, <-chan struct{})
			}); ok {
				_, watch = w.Watch()
			}
		case <-poll.C:
		}
	}
	return nil
}

// next takes the next message to send: a retry that is due, else the
// oldest queued one, if the window has room. Otherwise it says how long
// until a retry is due, and whether nothing at all is left.
func (p *Buffered) next() (e *entry, wait time.Duration, idle bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	idle = p.count == 0
	if len(p.inflight) >= p.cfg.MaxInFlight {
		return nil, 0, idle
	}
	now := time.Now()
	best := -1
	for i, r := range p.retries {
		if best < 0 || r.due.Before(p.retries[best].due) {
			best = i
		}
	}
	if best >= 0 && !p.retries[best].due.After(now) {
		e = p.retries[best]
		p.retries = append(p.retries[:best], p.retries[best+1:]...)
		p.handing++
		return e, 0, false
	}
	if len(p.queue) > 0 {
		e = p.queue[0]
		p.queue[0] = nil
		p.queue = p.queue[1:]
		p.handing++
		return e, 0, false
	}
	if best >= 0 {
		wait = p.retries[best].due.Sub(now)
	}
	return nil, wait, idle
}

func (p *Buffered) unhand() {
	p.mu.Lock()
	p.handing--
	p.mu.Unlock()
}

// putBack returns an unsent message to the front of the line.
func (p *Buffered) putBack(e *entry) {
	p.mu.Lock()
	defer p.mu.Unlock()
	e.due = time.Time{}
	p.retries = append(p.retries, e)
}

func (p *Buffered) register(e *entry, snd *sending) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.inflight[e.msg] = e
	e.sender = snd
}

// unregister takes e out of flight, if it still is in flight on snd.
func (p *Buffered) unregister(e *entry, snd *sending) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if cur, ok := p.inflight[e.msg]; !ok || cur != e || e.sender != snd {
		return false
	}
	delete(p.inflight, e.msg)
	e.sender = nil
	return true
}

// take finds the in-flight entry of m sent by snd, and takes it out of
// flight.
func (p *Buffered) take(snd *sending, m *nats.Msg) *entry {
	p.mu.Lock()
	defer p.mu.Unlock()
	e, ok := p.inflight[m]
	if !ok || e.sender != snd {
		return nil
	}
	delete(p.inflight, m)
	e.sender = nil
	return e
}

// acked is nats.go's ack callback: it must not block.
func (p *Buffered) acked(snd *sending, m *nats.Msg, ack *jetstream.PubAck) {
	if e := p.take(snd, m); e != nil {
		p.settle(e, ack, nil)
		if p.backlog() {
			p.wake() // room in the window for what waits
		}
	}
}

// backlog reports whether the send loop has anything to do: messages
// waiting, or a stop waiting for the last acks.
func (p *Buffered) backlog() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.queue) > 0 || len(p.retries) > 0 || p.stopping
}

// failed is nats.go's error callback: a final error settles the message,
// any other sends it again later.
func (p *Buffered) failed(snd *sending, m *nats.Msg, err error) {
	e := p.take(snd, m)
	if e == nil {
		return
	}
	if final(err) {
		p.settle(e, nil, err)
	} else {
		e.noStream = errors.Is(err, jetstream.ErrNoStreamResponse)
		p.retry(e, err)
	}
	p.wake()
}

// retry queues e to be sent again: at once when the cause was a
// disconnect (it goes when the connection is back), after a growing wait
// otherwise.
func (p *Buffered) retry(e *entry, err error) {
	p.stats.retried.Add(1)
	p.mu.Lock()
	defer p.mu.Unlock()
	e.attempts++
	e.due = time.Now()
	if !errors.Is(err, nats.ErrDisconnected) {
		d := p.cfg.RetryWait << min(e.attempts-1, 30)
		if d <= 0 || d > p.cfg.MaxRetryWait {
			d = p.cfg.MaxRetryWait
		}
		e.due = e.due.Add(d)
	}
	p.retries = append(p.retries, e)
}

// resendInflight queues everything in flight on a connection that is
// gone.
func (p *Buffered) resendInflight() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for m, e := range p.inflight {
		delete(p.inflight, m)
		e.sender, e.due = nil, time.Time{}
		p.retries = append(p.retries, e)
	}
}

// final reports errors that sending again cannot mend.
func final(err error) bool {
	var apiErr *jetstream.APIError
	if errors.As(err, &apiErr) {
		switch apiErr.ErrorCode {
		case jetstream.JSErrCodeStreamWrongLastSequence, jetstream.JSErrCodeStreamWrongLastSequenceConstant,
			jetstream.JSErrCodeStreamMessageExceedsMaximum, jetstream.JSErrCodeStreamNotFound,
			10070, // wrong last msg ID
			10060: // expected stream does not match
			return true
		}
		return apiErr.Code == 400 && apiErr.ErrorCode != 0
	}
	return errors.Is(err, nats.ErrPermissionViolation) || errors.Is(err, nats.ErrMaxPayload)
}

// streamMissing reports whether no stream stores subject, remembering the
// answer for a second so that a burst does not ask for every message.
func (p *Buffered) streamMissing(ctx context.Context, js jetstream.JetStream, subject string) bool {
	p.noStreamMu.Lock()
	at, known := p.noStream[subject]
	p.noStreamMu.Unlock()
	if known && time.Since(at) < time.Second {
		return true
	}
	lctx, cancel := context.WithTimeout(ctx, apiTimeout)
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

// setCurrent tells publishers whether they may send directly, on snd.
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
// stay for the next start, without one they go to OnUndelivered.
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
	left := append(append(append([]*entry(nil), p.queue...), p.retries...), mapValues(p.inflight)...)
	p.queue, p.retries, p.inflight = nil, nil, map[*nats.Msg]*entry{}
	spooled := p.spool != nil
	p.mu.Unlock()
	for _, e := range left {
		if spooled {
			// Kept on disk for the next start; this run no longer has it.
			p.mu.Lock()
			p.count--
			p.bytes -= e.size
			p.mu.Unlock()
			e.future.settle(nil, ErrStopped)
			continue
		}
		if p.cfg.OnUndelivered != nil {
			p.cfg.OnUndelivered(e.msg.Subject, e.msg.Data, ErrStopped)
		}
		p.stats.undelivered.Add(1)
		p.settle(e, nil, ErrStopped)
	}
	if spooled {
		p.mu.Lock()
		p.spool.close()
		p.spool = nil
		p.mu.Unlock()
	}
	p.events.Emit(Stopped{EventTime: p.events.Now(), Undelivered: len(left), Spooled: spooled})
	return ctx.Err()
}

// reopen readies a publisher served again after a stop.
func (p *Buffered) reopen() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.stopping {
		return nil
	}
	if p.cfg.SpoolDir != "" && p.spool == nil {
		s, recovered, err := openSpool(p.cfg.SpoolDir, p.cfg.SpoolSync)
		if err != nil {
			return err
		}
		p.spool = s
		for _, e := range recovered {
			e.future = newFuture()
			p.queue = append(p.queue, e)
			p.count++
			p.bytes += e.size
		}
	}
	p.stopping = false
	return nil
}

func mapValues(m map[*nats.Msg]*entry) []*entry {
	out := make([]*entry, 0, len(m))
	for _, e := range m {
		out = append(out, e)
	}
	return out
}
