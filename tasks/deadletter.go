package tasks

import (
	"context"
	"fmt"
	"time"

	"github.com/corral-go/corral/internal/jsapi"
)

// fail records a failed run: the task goes back to the queue after the
// backoff for its failures, or past MaxFailures it ends (see retire).
func (r *run) fail(ctx context.Context, rec record, next task, cause error) error {
	next.failures++
	cfg := r.w.cfg
	if cfg.MaxFailures < 0 || next.failures < cfg.MaxFailures {
		next.notBefore = time.Now().Add(cfg.Backoff[min(next.failures, len(cfg.Backoff))-1])
		next.avoid = r.id
		return r.putBack(ctx, rec, next, cause)
	}
	return r.retire(ctx, rec, next, cause)
}

// putBack puts rec's task back in the queue as next, after a run that
// ended with cause (nil: it was handed back). A put-back the server
// refuses for its size ends the task (see retire): it could not go back,
// and sending it again would not change that.
func (r *run) putBack(ctx context.Context, rec record, next task, cause error) error {
	err := r.ledger().putBack(ctx, rec, next)
	if !jsapi.TooLarge(err) {
		return err
	}
	return r.retire(ctx, rec, next, withRefusal(cause, err))
}

// retire ends rec's task for good after cause: it publishes next, the
// task as it leaves, to the dead-letter subject, when one is set, then
// replaces rec with a failed tombstone, and reports DeadLettered. A dead
// letter the server refuses for its size ends the task all the same,
// without it; one not stored for another reason puts the task back with
// the failures it was held with, to run again after the longest backoff.
func (r *run) retire(ctx context.Context, rec record, next task, cause error) error {
	ended, ok := r.deadLetter(ctx, next, rec.attempt, cause)
	if !ok {
		next.failures = rec.failures
		next.notBefore = time.Now().Add(r.w.cfg.Backoff[len(r.w.cfg.Backoff)-1])
		return r.ledger().putBack(ctx, rec, next)
	}
	if err := r.ledger().finish(ctx, rec, stateFailed, ended.Err, nil); err != nil {
		return err
	}
	r.emit(ended)
	return nil
}

// tooLarge ends the task d carries, whose claim the server refused for
// its size: no worker could run it, and offered again it would take a
// worker's slot each time, for ever. It is dead-lettered, when a
// dead-letter subject is set and the server takes the dead letter, and
// removed from the queue. Were the removal lost, the copy comes back
// after ClaimWait and this is done again: the dead letter's Msg-Id makes
// it one message.
func (r *run) tooLarge(ctx context.Context, d *delivery, t task, cause error) {
	ended, ok := r.deadLetter(ctx, t, t.attempt, cause)
	if !ok {
		_ = d.nak(r.w.cfg.Backoff[len(r.w.cfg.Backoff)-1])
		return
	}
	_ = d.ack()
	r.emit(ended)
}

// deadLetter publishes t to the dead-letter subject, when one is set,
// after its run at attempt failed with cause, and returns the event that
// says how the task ends: with its dead letter stored, or without one
// (none is set, or the server refused it for its size, which no try
// would change: Err then says so). ok is false, the reason reported, when
// the dead letter was not stored for a reason a later try may not meet.
func (r *run) deadLetter(ctx context.Context, t task, attempt int, cause error) (ended DeadLettered, ok bool) {
	ended = DeadLettered{Queue: r.w.queue, Task: t.id, Failures: t.failures, Err: cause}
	subject := r.w.cfg.DeadLetter
	if subject == "" {
		return ended, true
	}
	_, err := publish(ctx, r.ledger().js, deadLetterMsg(subject, t, attempt, cause))
	switch {
	case err == nil:
		ended.DeadLetter = subject
	case jsapi.TooLarge(err):
		ended.Err = withRefusal(cause, fmt.Errorf("dead letter to %s: %w", subject, err))
	default:
		r.w.queueError("dead-letter", fmt.Errorf("task %s to %s: %w", t.id, subject, err))
		return ended, false
	}
	return ended, true
}

// emit reports e, stamped now.
func (r *run) emit(e DeadLettered) {
	e.EventTime = r.w.events.Stamp()
	r.w.events.Emit(e)
}

// withRefusal is cause, if any, and the refusal of a write that ended
// the task, both matchable.
func withRefusal(cause, refusal error) error {
	if cause == nil {
		return refusal
	}
	return fmt.Errorf("%w; %w", cause, refusal)
}
