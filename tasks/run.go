package tasks

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/corral-go/corral/internal/backoff"
	"github.com/corral-go/corral/internal/jsapi"
	"github.com/corral-go/corral/supervisor"
)

const (
	// retryDelay is how soon a copy the worker could not decide about (its
	// holder putting it back) is offered again.
	retryDelay = time.Second
	// avoidDelay is how long a copy handed back by this worker waits
	// before it is offered again, so that another worker takes it.
	avoidDelay = 100 * time.Millisecond
	// avoidDeliveries is how often a copy is passed over by the worker it
	// avoids before that worker takes it anyway: no other has.
	avoidDeliveries = 20
)

// errPassed marks a copy the worker did not claim: it was naked or acked
// already, and nothing is left to settle.
var errPassed = errors.New("copy passed over")

// Handle claims the task d carries and runs it. A copy that is not this
// worker's to run (delayed, avoiding it, held by another, finished) is
// passed back or dropped, and Handle returns errPassed.
func (r *run) Handle(ctx context.Context, d *delivery) error {
	if !r.ahead.start(d, time.Now()) {
		return errPassed
	}
	// First, so that a copy taken after the lease was lost is counted as
	// held by LeaseLost before it is let go.
	if !r.entitled() {
		_ = d.nak(0)
		return errPassed
	}
	t := parseTask(d.raw.Header, d.raw.Data, d.meta.Sequence.Stream)
	t.copySeq = d.meta.Sequence.Stream
	if r.passOver(d, t) {
		return errPassed
	}
	// One copy of a task at a time: another copy here may be putting it
	// back, so this one is not known to be a duplicate yet.
	if !r.running.reserve(t.id) {
		_ = d.nak(retryDelay)
		return errPassed
	}
	d.reserved = t.id
	if r.lazy(d, t) {
		return r.startLazy(ctx, d, t)
	}
	seq, err := r.claim(ctx, t, 0)
	if err == nil {
		d.rec = record{task: t, holder: r.holder(), state: stateHeld, seq: seq}
	} else if d.rec, err = r.decide(ctx, d, t, err); err != nil {
		return errPassed
	}
	if r.w.dies(stepClaimed) {
		return errPassed
	}
	d.claimed = true
	// The record holds the task from here: the queue's copy can go. Were
	// this ack lost, the copy comes back after ClaimWait and is dropped as
	// a duplicate.
	_ = d.ack()
	if r.w.dies(stepAcked) {
		d.claimed = false
		return errPassed
	}
	r.w.stats.started.Add(1)
	rctx, cancel := r.cancels.start(ctx, t.id, d.rec.seq, 0)
	defer r.cancels.stop(t.id, cancel)
	d.taskBuf = Task{rec: d.rec, queue: r.w.queue, run: r, reports: &r.progress}
	d.task = &d.taskBuf
	d.task.token.Store(d.rec.seq)
	err = r.runTask(rctx, d.task)
	if r.w.dies(stepRan) {
		d.claimed = false
		return errPassed
	}
	return err
}

// runTask runs the handler on task, within the Timeout.
func (r *run) runTask(ctx context.Context, task *Task) error {
	if r.w.cfg.Timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, r.w.cfg.Timeout)
		defer cancel()
	}
	err := r.w.handler.Run(ctx, task)
	if err != nil && errors.Is(context.Cause(ctx), ErrCancelled) {
		err = fmt.Errorf("%w: %w", ErrCancelled, err)
	}
	return err
}

// passOver lets go of the copy d of t, and reports so, when it is not to
// run here now: not due yet (a copy an earlier version delayed), or put
// back by this worker and not yet passed over by others.
func (r *run) passOver(d *delivery, t task) bool {
	wait := time.Until(t.notBefore)
	switch {
	case wait > 0:
	case t.avoid == r.id && d.meta.NumDelivered <= avoidDeliveries:
		wait = avoidDelay
	default:
		return false
	}
	r.w.stats.passedOver.Add(1)
	_ = d.nak(wait)
	return true
}

// claim claims t for this worker, asking again for as long as the
// outcome is unknown and the worker may still write: a claim whose answer
// was lost (a disconnect, a leader change) may have been stored, and only
// this worker can tell, so the copy is not given up meanwhile. Asking
// again finds the stored claim as a record of this worker's own, which
// decide returns.
func (r *run) claim(ctx context.Context, t task, after uint64) (uint64, error) {
	for wait := settleRetryMin; ; wait = min(2*wait, settleRetryMax) {
		seq, err := r.ledger().claim(ctx, t, r.holder(), after)
		if !errors.Is(err, errUnsure) || ctx.Err() != nil || !r.entitled() {
			return seq, err
		}
		if wait == settleRetryMin {
			// Once per copy: an outage fails every claim in flight.
			r.w.queueError("claim", err)
		}
		if jsapi.StreamMissing(err) {
			r.redeclare(ctx) // the held stream was deleted
		}
		_ = backoff.Wait(ctx, wait)
	}
}

// decide handles a copy whose claim failed: a duplicate of a task held or
// finished is dropped; one that its holder is putting back is offered
// again shortly, and one whose claim was cut short by a stop at once. A
// record of this worker's own that no run here holds is a claim whose
// answer was lost: decide returns it, and the task runs under it.
func (r *run) decide(ctx context.Context, d *delivery, t task, err error) (record, error) {
	var held *heldError
	switch {
	case errors.Is(err, errUnsure):
		// Stopping: if the claim was stored, the recoverer puts the task
		// back once the lease is released.
		_ = d.nak(0)
		return record{}, errPassed
	case jsapi.TooLarge(err):
		r.tooLarge(ctx, d, t, err)
		return record{}, errPassed
	case !errors.As(err, &held):
		// Refused, so not stored: offered again later, reported each time.
		r.w.queueError("claim", err)
		_ = d.nak(r.w.cfg.Backoff[len(r.w.cfg.Backoff)-1])
		return record{}, errPassed
	}
	rec, rerr := r.ledger().read(ctx, held.seq)
	switch {
	case rerr != nil:
		// Replaced or put back meanwhile: look again.
		_ = d.nak(retryDelay)
	case rec.state == stateHeld && rec.worker == r.id && rec.attempt >= t.attempt:
		// This worker's own claim, and no run of the task here: its answer
		// was lost.
		return rec, nil
	case retries(t, rec) && rec.marker() && r.ledger().running(ctx, t.id):
		// Cancelled while it runs: the run ends first.
		_ = d.nak(retryDelay)
	case retries(t, rec):
		// The task enqueued again under the id of one that failed for
		// good or was cancelled: a fresh copy goes on from the ended
		// run's attempt, its failures counted afresh; a put-back of it
		// keeps its own. Claimed after the tombstone or marker alone.
		if t.attempt == 0 {
			t.attempt, t.failures = rec.attempt+1, 0
		}
		seq, err := r.claim(ctx, t, rec.seq)
		if err != nil {
			return r.decide(ctx, d, t, err)
		}
		return record{task: t, holder: r.holder(), state: stateHeld, seq: seq}, nil
	case rec.state == stateCancelled:
		// Cancelled (a marker, or a run it cut short) and not enqueued
		// again since: dropped.
		r.w.stats.cancelled.Add(1)
		_ = d.ack()
	case rec.state != stateHeld, rec.attempt >= t.attempt:
		// Finished, or held since this copy was made: a duplicate.
		r.w.stats.duplicates.Add(1)
		_ = d.ack()
	default:
		// Its holder put it back (this copy's attempt is newer) and has not
		// removed its record yet.
		_ = d.nak(retryDelay)
	}
	return record{}, errPassed
}

// maxResult is the longest result rec's tombstone can keep: MaxResult,
// or less when the server's max_payload takes less beside its headers.
func (r *run) maxResult(rec record) int {
	limit := int(r.w.cfg.MaxResult)
	if l := r.ledger(); l != nil {
		tomb := l.names.tombstoneMsg(rec, stateDone, nil, r.w.cfg.KeepResults, nil)
		limit = min(limit, int(l.js.Conn().MaxPayload())-headerSize(tomb.Header))
	}
	return max(limit, 0)
}

// retries reports whether copy t is the task enqueued again after rec, a
// failed run's tombstone or a cancel: by another EnqueueTask call (its
// nonce), stored in the queue after the copy rec's run was claimed from
// or after the cancel (its sequence), or a put-back of such a run. A copy
// of the ended run itself, or of one before it, is not.
func retries(t task, rec record) bool {
	return (rec.state == stateFailed || rec.state == stateCancelled) && t.nonce != "" && t.nonce != rec.nonce &&
		t.copySeq > rec.copySeq
}

// Settle writes the outcome of a run: the task done, handed back, failed
// (back in the queue after its backoff, or dead-lettered), or cut off by
// a stop (back in the queue). A write that fails is tried again, as long
// as the task is the worker's: a task left held by a live worker would
// run nowhere. A run whose worker lost its lease writes nothing: the task
// is another's.
func (r *run) Settle(ctx context.Context, d *delivery, err error) {
	defer r.puller.Release()
	if d.reserved != "" {
		defer r.running.release(d.reserved)
	}
	if errors.Is(err, errPassed) {
		return
	}
	r.pace.ended(time.Now())
	if d.lazy != nil {
		if !r.endLazy(ctx, d, err) {
			return
		}
		if err != nil && errors.Is(context.Cause(d.lazy.ctx), errClaimLate) {
			err = HandBack(0) // cut off, not failed: put back
		}
	}
	if !d.claimed {
		return
	}
	write, count := r.outcome(d.rec, err, d.task)
	for wait := settleRetryMin; ; wait = min(2*wait, settleRetryMax) {
		if !r.entitled() {
			// LeaseLost reports it, once for all the tasks the run held.
			// A write already tried may have been stored all the same.
			if wait == settleRetryMin {
				r.w.stats.rejected.Add(1)
			} else {
				r.w.stats.unconfirmed.Add(1)
			}
			return
		}
		wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), jsapi.Timeout)
		werr := write(wctx)
		cancel()
		switch {
		case werr == nil, errors.Is(werr, errRecordGone):
			count.Add(1)
			return
		case errors.Is(werr, ErrFenced):
			r.rejected(d.rec, werr)
			return
		}
		if wait == settleRetryMin {
			r.w.queueError("settle", werr)
		}
		// Cut off by a stop: the record stays until the recoverer puts
		// the task back, once the lease is released, unless the write that
		// failed was stored.
		if backoff.Wait(ctx, wait) != nil {
			r.w.stats.unconfirmed.Add(1)
			return
		}
	}
}

// Bounds of the wait before an outcome whose write failed is written again.
const (
	settleRetryMin = 100 * time.Millisecond
	settleRetryMax = 2 * time.Second
)

// outcome is the write a run's end calls for, and what it counts: with
// err nil, the task's last progress, then a tombstone that keeps its
// result.
func (r *run) outcome(rec record, err error, task *Task) (func(context.Context) error, *atomic.Uint64) {
	next := rec.task
	next.attempt, next.notBefore = next.attempt+1, time.Time{}
	switch delay, back := handBack(err); {
	case err == nil:
		return func(ctx context.Context) error {
			r.flushLast(ctx, task)
			return r.ledger().finish(ctx, rec, stateDone, nil, task.result())
		}, &r.w.stats.completed
	case errors.Is(err, ErrCancelled):
		return func(ctx context.Context) error { return r.ledger().finish(ctx, rec, stateCancelled, err, nil) }, &r.w.stats.cancelled
	case back:
		if next.avoid = r.id; delay > 0 {
			next.notBefore = time.Now().Add(delay)
		}
		return func(ctx context.Context) error { return r.putBack(ctx, rec, next, err) }, &r.w.stats.handedBack
	case r.pool.CutOff(err):
		return func(ctx context.Context) error { return r.putBack(ctx, rec, next, err) }, &r.w.stats.handedBack
	}
	r.w.stats.failed.Add(1)
	return func(ctx context.Context) error { return r.fail(ctx, rec, next, err) }, new(atomic.Uint64)
}

// Return offers a copy the worker did not start back to the queue at once.
func (r *run) Return(d *delivery) {
	if r.ahead.returned(d) {
		_ = d.nak(0)
	}
	r.puller.Release()
}

// ReportPanic reports a panic in a task's run, which counts as a failure.
func (r *run) ReportPanic(d *delivery, err *supervisor.PanicError, suppressed uint64) {
	r.w.events.Emit(TaskPanicked{EventTime: r.w.events.Stamp(), Queue: r.w.queue, Task: d.rec.id, Err: err, Suppressed: suppressed})
}

// rejected reports a write about rec refused because the task is no
// longer this worker's.
func (r *run) rejected(rec record, err error) {
	r.w.stats.rejected.Add(1)
	r.w.events.Emit(CompletionRejected{EventTime: r.w.events.Stamp(), Queue: r.w.queue, Task: rec.id, Worker: rec.worker,
		Process: rec.process, Err: err})
}
