package tasks

import (
	"context"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/corral-go/corral/connection"
	"github.com/corral-go/corral/internal/backoff"
	"github.com/corral-go/corral/internal/event"
	"github.com/corral-go/corral/internal/jsapi"
	"github.com/corral-go/corral/kv"
)

// recoverer puts the tasks of dead workers back in the queue. Every
// worker of a queue runs one; only the one that holds the queue's
// recoverer lock acts, so recovery runs in one place at a time. It reacts
// to each lease that expires or is released, at once, and sweeps every
// record every SweepEvery for what a reaction missed: a lease that expired
// while no recoverer ran (its marker lives only as long as the bucket's
// TTL). Putting a task back is idempotent, so a recovery that crashes
// halfway is simply done again.
type recoverer struct {
	queue  string
	worker string // this process's worker, for events
	leases *kv.Bucket[string]
	lock   *kv.Lock
	src    connection.Source // for releasing the lock while stopping
	ledger func() *ledger    // on the current connection
	every  time.Duration
	// minAge is the age under which a sweep leaves a record: a replica
	// that answers a lease's read may not have a new worker's lease yet,
	// and that worker's first claims must not look like a dead worker's.
	minAge time.Duration
	events *event.Emitter
	failed func(op string, err error) // reports a QueueError

	recovered *atomic.Uint64 // the worker's count
	// retire ends a task that cannot go back in the queue (see run.retire).
	retire func(ctx context.Context, rec record, next task, cause error) error

	mu      sync.Mutex // one recovery at a time
	elected atomic.Bool
}

// retryWait is the pause before the recoverer tries again after a
// failure to reach the server.
const retryWait = time.Second

// run competes for the recoverer lock until ctx ends, and recovers while
// it holds it.
func (r *recoverer) run(ctx context.Context) {
	for ctx.Err() == nil {
		lease, err := r.lock.Acquire(ctx)
		if err != nil {
			if ctx.Err() == nil {
				r.failed("elect recoverer", err)
				_ = backoff.Wait(ctx, retryWait)
			}
			continue
		}
		r.elected.Store(true)
		r.events.Emit(RecovererElected{EventTime: r.events.Stamp(), Queue: r.queue, Worker: r.worker})
		r.serve(ctx, lease)
		r.elected.Store(false)
		rctx, cancel := releaseCtx(ctx, r.src)
		_ = lease.Release(rctx)
		cancel()
	}
}

// serve recovers until ctx ends or the lock is lost.
func (r *recoverer) serve(ctx context.Context, lease *kv.Lease) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var wg sync.WaitGroup
	defer wg.Wait()
	wg.Go(func() {
		select {
		case <-lease.Lost():
			cancel()
		case <-ctx.Done():
		}
	})
	w, err := r.leases.Watch("recoverer", kv.WatchConfig{Keys: []string{leaseKeysPattern}, UpdatesOnly: true},
		func(ctx context.Context, e kv.Entry[string]) error {
			switch e.Op {
			case kv.Delete, kv.Purge, kv.Expired:
				_, err := r.recoverWorker(ctx, strings.TrimPrefix(e.Key, "w."), e.Op == kv.Expired, 0)
				return err
			}
			return nil // a lease taken or renewed, or the watch caught up
		})
	if err == nil {
		wg.Go(func() {
			for ctx.Err() == nil {
				if err := w.Serve(ctx); ctx.Err() == nil {
					r.failed("watch leases", err)
					_ = backoff.Wait(ctx, retryWait)
				}
			}
		})
	}
	t := time.NewTimer(0) // a new recoverer sweeps at once
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		again, err := r.sweep(ctx)
		if err != nil && ctx.Err() == nil {
			r.failed("sweep", err)
			t.Reset(retryWait)
			continue
		}
		t.Reset(sweepWait(r.every, again))
	}
}

// sweepWait is how long until the next sweep: every, or less when a
// record the sweep left for its age comes of age sooner. A worker that
// died holding a task it had just claimed, at the time the recoverer
// itself died, is seen by no lease's expiry (the new recoverer was not
// watching yet) and is recovered by a sweep: it waits for its record to
// come of age, not for the next sweep a minute later.
func sweepWait(every time.Duration, again time.Time) time.Duration {
	if again.IsZero() {
		return every
	}
	return max(min(every, time.Until(again)), sweepMinWait)
}

// sweepMinWait bounds how often sweeps follow one another.
const sweepMinWait = 50 * time.Millisecond

// sweep recovers the tasks of every worker that holds some and has no
// lease. again, if not zero, is when the first record it left for its
// age (younger than minAge) comes of age.
func (r *recoverer) sweep(ctx context.Context) (again time.Time, err error) {
	owners := map[string]bool{}
	err = r.ledger().scan(ctx, r.ledger().names.heldAll(), true, func(rec record) error {
		if rec.state == stateHeld {
			owners[rec.worker] = true
		}
		return nil
	})
	if err != nil {
		return time.Time{}, err
	}
	for w := range owners {
		next, err := r.recoverWorker(ctx, w, true, r.minAge)
		if err != nil {
			return time.Time{}, err
		}
		if !next.IsZero() && (again.IsZero() || next.Before(again)) {
			again = next
		}
	}
	return again, nil
}

// recoverWorker puts every task worker holds back in the queue, unless it
// holds a lease; records younger than minAge stay, and again is when the
// first of them comes of age. dead says its lease expired (rather than
// being released by a worker that stopped cleanly).
func (r *recoverer) recoverWorker(ctx context.Context, worker string, dead bool, minAge time.Duration) (again time.Time, err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, err := r.leases.Get(ctx, leaseKey(worker)); err == nil || !errors.Is(err, kv.ErrKeyNotFound) {
		return time.Time{}, err // alive, or unknown: the next sweep looks again
	}
	start, n, process := time.Now(), 0, ""
	err = r.ledger().scan(ctx, r.ledger().names.heldByWorker(worker), false, func(rec record) error {
		if process == "" {
			process = rec.process // a tombstone's names it too
		}
		if rec.state != stateHeld {
			return nil
		}
		if of := rec.stored.Add(minAge); time.Now().Before(of) {
			if again.IsZero() || of.Before(again) {
				again = of
			}
			return nil
		}
		next := rec.task
		next.attempt++
		next.notBefore, next.avoid = time.Time{}, ""
		switch err := r.ledger().putBack(ctx, rec, next); {
		case err == nil:
			n++
		case jsapi.TooLarge(err):
			// The queue's stream takes less than the held stream did (its
			// max_msg_size lowered since): the task ends here, and the
			// worker's other tasks are recovered all the same.
			return r.retire(ctx, rec, next, err)
		case !errors.Is(err, errRecordGone): // else put back meanwhile
			return err
		}
		return nil
	})
	if dead || n > 0 {
		r.events.Emit(WorkerDead{EventTime: r.events.Stamp(), Queue: r.queue, Worker: worker, Process: process})
	}
	if n > 0 {
		r.recovered.Add(uint64(n))
		r.events.Emit(TasksRecovered{EventTime: r.events.Stamp(), Queue: r.queue, Worker: worker, Process: process, Tasks: n,
			Took: time.Since(start)})
	}
	return again, err
}
