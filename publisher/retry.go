package publisher

import (
	"cmp"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/corral-go/corral/internal/backoff"
	"github.com/corral-go/corral/internal/jsapi"
)

// requeueOutcome is what requeueLocked did with an entry, and so what its
// caller does with it once p.mu is released ([Buffered.settleUnqueued]).
type requeueOutcome int

const (
	queued  requeueOutcome = iota // back in line
	gaveUp                        // out of attempts: settle as failed
	tooLate                       // the publisher stopped meanwhile: undeliver
)

// requeueLocked puts e, out of flight, back in line in accept order: due
// at once when the connection was lost (lost), which costs no attempt;
// after a growing wait otherwise. Once a stop has collected what is left,
// or e is out of attempts, it leaves e to the caller.
func (p *Buffered) requeueLocked(e *entry, err error, lost bool) requeueOutcome {
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
		e.due = e.due.Add(retryDelay(p.cfg.RetryWait, p.cfg.MaxRetryWait, e.attempts))
	} else if err != nil {
		p.stats.retried.Add(1)
	}
	i, _ := slices.BinarySearchFunc(p.retries, e.order, func(r *entry, o uint64) int { return cmp.Compare(r.order, o) })
	p.retries = slices.Insert(p.retries, i, e)
	return queued
}

// retryDelay is the wait before the retry that follows failure number n
// (from 1): wait doubled n-1 times, at most maxWait, never wrapping.
func retryDelay(wait, maxWait time.Duration, n int) time.Duration {
	return backoff.Doubling(wait, maxWait, n-1)
}

// final returns the error a message fails with for good when err is a
// refusal that sending again cannot mend, or nil when err is transient
// and the message is sent again (up to MaxAttempts). A stream or server
// out of room fails at once with ErrStreamFull: room comes back only when
// consumers, limits or an operator free it, on no schedule a retry could
// follow, and a message retried meanwhile holds its place in the buffer.
// The package documentation lists the refusals.
func final(err error) error {
	r, isAPI := jsapi.PublishRefusal(err)
	switch {
	case r == jsapi.Full:
		return fmt.Errorf("%w: %w", ErrStreamFull, err)
	case r == jsapi.Final:
		return err
	case !isAPI && (errors.Is(err, nats.ErrPermissionViolation) || errors.Is(err, nats.ErrMaxPayload) ||
		errors.Is(err, jetstream.ErrInvalidJSAck)): // something other than a stream answers
		return err
	}
	return nil
}
