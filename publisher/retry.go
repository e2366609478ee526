package publisher

import (
	"cmp"
	"fmt"
	"slices"
	"time"

	"github.com/corral-go/corral/internal/jsapi"
)

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
