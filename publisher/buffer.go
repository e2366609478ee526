package publisher

import (
	"context"
	"fmt"
	"slices"
	"time"
)

// admit waits for room for e, then spools it, stamps its accept order and
// counts it in the buffer. It then queues e for the send loop, or, for a
// PublishSync caller (direct) whom claimDirectLocked lets send e itself,
// returns the session to send it on. A message always fits an empty
// buffer. admit fails with ErrStopped once the publisher is stopping, and
// on a full buffer with ErrBufferFull at once (on_full: error) or when
// ctx ends (on_full: block).
func (p *Buffered) admit(ctx context.Context, e *entry, direct bool) (*session, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for {
		if p.stopping {
			return nil, ErrStopped
		}
		if p.count < p.cfg.BufferMsgs && p.bytes+e.size <= int(p.cfg.BufferBytes) || p.count == 0 {
			return p.admitLocked(e, direct)
		}
		if p.cfg.OnFull == Error {
			p.stats.rejected.Add(1)
			return nil, ErrBufferFull
		}
		space := p.space
		p.waiters++
		p.mu.Unlock()
		select {
		case <-ctx.Done():
			p.mu.Lock()
			p.waiters--
			p.stats.rejected.Add(1)
			return nil, fmt.Errorf("%w: %w", ErrBufferFull, ctx.Err())
		case <-space:
		}
		p.mu.Lock()
		p.waiters--
	}
}

// admitLocked spools e, stamps and counts it, and queues it or claims its
// send for a direct caller, as admit says, with room for it in the
// buffer.
func (p *Buffered) admitLocked(e *entry, direct bool) (*session, error) {
	if p.spool != nil {
		if err := p.spool.append(e); err != nil {
			return nil, err
		}
	}
	p.order++
	e.order = p.order
	p.count++
	p.bytes += e.size
	p.stats.published.Add(1)
	if direct {
		if sess := p.claimDirectLocked(e); sess != nil {
			return sess, nil
		}
	}
	p.queue = append(p.queue, e)
	return nil, nil
}

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
		// (accept wakes the loop when it is done): sending now could
		// overtake it.
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

// sendBatch is the most messages the send loop takes from the queue at
// once: it locks the buffer a few times a batch, where it locked it three
// times a message, against the Publish callers and acks that lock it too.
const sendBatch = 64

// takeMore appends to batch, whose first entry next took from the queue
// or the retries, the queued messages that follow it, as next would
// return them, up to sendBatch and the room in the window: only while
// nothing is refused, waits to be retried or is being sent directly,
// which next would take first or must not be overtaken. They are counted
// in taken.
func (p *Buffered) takeMore(batch []*entry) []*entry {
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.refused) > 0 || len(p.retries) > 0 || p.directSends > 0 {
		return batch
	}
	n := min(len(p.queue), sendBatch-len(batch), p.cfg.MaxInFlight-len(p.inflight)-len(batch))
	if n <= 0 {
		return batch
	}
	batch = append(batch, p.queue[:n]...)
	clear(p.queue[:n])
	p.queue = p.queue[n:]
	p.taken += n
	return batch
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
