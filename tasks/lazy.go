package tasks

import (
	"context"
	"errors"
	"sync"
	"time"
)

// errClaimLate is the cause of a lazy run's cancel when its claim got no
// answer before the queue was to offer its copy again: the run stops, and
// the task is put back if the claim was stored after all.
var errClaimLate = errors.New("tasks: the claim of a lazily started task got no answer in time")

// lazyRun is a run started without a claim (Config.ClaimAfter): its copy
// stays unacknowledged in the queue until the run ends, or until it is
// promoted, claimed as any task, once it has run ClaimAfter.
type lazyRun struct {
	deadline time.Time       // when the queue offers the copy again, less a tenth
	ctx      context.Context // the run's
	cancel   context.CancelCauseFunc

	// On the promoter's list, guarded by its mutex:
	due    dueEntry[*lazyRun]
	parent context.Context // the one promote claims under
	d      *delivery

	mu     sync.Mutex
	ended  bool          // the run ended: no promotion starts
	done   chan struct{} // made when a promotion starts, closed when it ends
	passed bool          // it found the task another's and let the copy go
}

// lazy reports whether the copy d of t may run before it is claimed: a
// task's first copy enqueued on the queue's Subject, delivered once, once
// the worker knows the queue's cancels. A task enqueued with EnqueueTask
// (a nonce), a periodic tick, a copy that came back or one delivered
// again (a promotion's ack may have been lost: only a claim tells) is
// claimed first.
func (r *run) lazy(d *delivery, t task) bool {
	return r.w.cfg.ClaimAfter > 0 && d.meta.NumDelivered == 1 && t.attempt == 0 && t.nonce == "" && t.schedule == "" &&
		r.cancels.current()
}

// startLazy runs the copy d of t without claiming it, to be promoted
// after ClaimAfter. A copy the queue's cancels name is dropped instead.
func (r *run) startLazy(ctx context.Context, d *delivery, t task) error {
	if r.cancels.cancelled(t.id, t.copySeq) {
		r.w.stats.cancelled.Add(1)
		_ = d.ack()
		return errPassed
	}
	d.lazyBuf = lazyRun{deadline: d.taken.Add(r.w.cfg.ClaimWait - r.w.cfg.ClaimWait/10)}
	l := &d.lazyBuf
	d.lazy = l
	d.rec = record{task: t, holder: r.holder(), state: stateHeld}
	r.w.stats.started.Add(1)
	l.ctx, l.cancel = r.cancels.start(ctx, t.id, 0, t.copySeq)
	defer r.cancels.stop(t.id, l.cancel)
	d.taskBuf = Task{rec: d.rec, queue: r.w.queue, run: r, reports: &r.progress, lazy: l}
	d.task = &d.taskBuf
	r.promoter.add(ctx, l, d)
	return r.runTask(l.ctx, d.task)
}

// promote claims a lazy run's task, as a claim-first run does before it
// starts, and acks the copy: from then on the run holds the task by its
// record. It does nothing once the run ended or a promotion started. A
// claim unanswered by the copy's deadline cancels the run (errClaimLate);
// the worker asks on, and the task is put back if it was stored.
func (r *run) promote(ctx context.Context, d *delivery) {
	l := d.lazy
	l.mu.Lock()
	if l.ended || l.done != nil {
		l.mu.Unlock()
		return
	}
	l.done = make(chan struct{})
	l.mu.Unlock()
	defer close(l.done)
	late := time.AfterFunc(time.Until(l.deadline), func() { l.cancel(errClaimLate) })
	defer late.Stop()
	r.claimLazy(ctx, d)
}

// claimLazy claims the task of the lazy run d and acks its copy, or lets
// the copy go (passed) when the task is another's.
func (r *run) claimLazy(ctx context.Context, d *delivery) {
	l := d.lazy
	t := d.rec.task
	seq, err := r.claim(ctx, t, 0)
	if err != nil {
		var rec record
		if rec, err = r.decide(ctx, d, t, err); err != nil {
			// Not this run's: decide let the copy go.
			l.passed = true
			l.cancel(ErrFenced)
			return
		}
		seq = rec.seq
	}
	// Only the sequence: the pool's worker may read the rest meanwhile.
	d.rec.seq = seq
	d.task.claimed(seq)
	r.cancels.claimed(t.id, seq)
	if r.w.dies(stepPromoted) {
		return
	}
	d.claimed = true
	_ = d.ack()
}

// endLazy ends a lazy run that returned err: it waits for a promotion in
// flight, and reports whether the run holds its task by a record now,
// for Settle to write its outcome as any claimed run's. Otherwise it
// settles the copy itself: a run that completed is acked; one cut off by a stop, or by a claim too late, is offered again at
// once; one cancelled is dropped. A result, a failure or a hand-back
// needs a record: the run is promoted first.
func (r *run) endLazy(ctx context.Context, d *delivery, err error) (claimed bool) {
	l := d.lazy
	r.promoter.remove(l)
	l.mu.Lock()
	l.ended = true
	done := l.done
	l.mu.Unlock()
	if done != nil {
		<-done
	}
	switch {
	case d.claimed:
		return true
	case l.passed:
		return false
	case !r.entitled():
		// The lease is lost: the copy comes back after ClaimWait.
		r.w.stats.rejected.Add(1)
		return false
	case r.w.dies(stepLazyRan):
		return false
	case errors.Is(err, ErrCancelled):
		r.w.stats.cancelled.Add(1)
		_ = d.ack()
		return false
	case r.pool.CutOff(err):
		r.w.stats.handedBack.Add(1)
		_ = d.nak(0)
		return false
	case err == nil && d.task.result() == nil && !d.task.progressPending():
		// Acked as a JetStream handler acks: an ack the server never takes
		// in lets the copy come back after ClaimWait, to run again.
		if d.ack() == nil {
			r.w.stats.completed.Add(1)
		}
		return false
	}
	r.claimLazy(ctx, d)
	return d.claimed
}
