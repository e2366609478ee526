package publisher

import (
	"cmp"
	"context"
	"slices"

	"github.com/nats-io/nats.go"
)

// stop refuses new messages, flushes what is buffered on sess (unless it
// is nil: no connection) until the shutdown timeout, then reports every
// message not delivered, in accept order: with a spool they stay for the
// next start, without one they go to OnUndelivered. Entries that nats.go's
// callbacks return after that are reported the same way (closed).
func (p *Buffered) stop(ctx context.Context, sess *session) error {
	p.mu.Lock()
	p.stopping = true
	close(p.space) // waiting publishers see that they are refused
	p.space = make(chan struct{})
	p.mu.Unlock()

	flushCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), p.cfg.Restart.Grace())
	defer cancel()
	if sess != nil {
		_ = p.sendLoop(flushCtx, sess)
	}

	p.mu.Lock()
	p.closed = true
	left := slices.Concat(p.queue, p.retries, p.refused)
	for _, e := range p.inflight {
		left = append(left, e)
	}
	p.queue, p.retries, p.refused, p.inflight = nil, nil, nil, map[*nats.Msg]*entry{}
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
