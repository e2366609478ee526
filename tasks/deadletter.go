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
	stored, err := r.deadLetter(ctx, next, rec.attempt, cause)
	switch {
	case jsapi.TooLarge(err):
		cause = withRefusal(cause, err)
	case err != nil:
		r.w.queueError("dead-letter", fmt.Errorf("task %s: %w", rec.id, err))
		next.failures = rec.failures
		next.notBefore = time.Now().Add(r.w.cfg.Backoff[len(r.w.cfg.Backoff)-1])
		return r.ledger().putBack(ctx, rec, next)
	}
	if err := r.ledger().finish(ctx, rec, stateFailed, cause); err != nil {
		return err
	}
	r.deadLettered(rec.id, stored, next.failures, cause)
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
	stored, err := r.deadLetter(ctx, t, t.attempt, cause)
	switch {
	case jsapi.TooLarge(err):
		cause = withRefusal(cause, err)
	case err != nil:
		r.w.queueError("dead-letter", fmt.Errorf("task %s: %w", t.id, err))
		_ = d.nak(r.w.cfg.Backoff[len(r.w.cfg.Backoff)-1])
		return
	}
	_ = d.ack()
	r.deadLettered(t.id, stored, t.failures, cause)
}

// deadLetter publishes t to the dead-letter subject, when one is set,
// after its run at attempt failed with cause, and reports whether it was
// stored. An error that jsapi.TooLarge matches cannot be mended by
// sending it again.
func (r *run) deadLetter(ctx context.Context, t task, attempt int, cause error) (bool, error) {
	subject := r.w.cfg.DeadLetter
	if subject == "" {
		return false, nil
	}
	if _, err := publish(ctx, r.ledger().js, deadLetterMsg(subject, t, attempt, cause)); err != nil {
		return false, fmt.Errorf("dead letter to %s: %w", subject, err)
	}
	return true, nil
}

// deadLettered reports a task that left the queue without completing.
func (r *run) deadLettered(id string, stored bool, failures int, cause error) {
	e := DeadLettered{EventTime: r.w.events.Stamp(), Queue: r.w.queue, Task: id, Failures: failures, Err: cause}
	if stored {
		e.DeadLetter = r.w.cfg.DeadLetter
	}
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
