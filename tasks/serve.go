package tasks

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/nats-io/nuid"

	"github.com/corral-go/corral/codec"
	"github.com/corral-go/corral/connection"
	"github.com/corral-go/corral/internal/afterfunc"
	"github.com/corral-go/corral/internal/jsapi"
	"github.com/corral-go/corral/internal/pool"
	"github.com/corral-go/corral/internal/pull"
	"github.com/corral-go/corral/kv"
)

// newRun takes a lease under a fresh identity and builds what runs under
// it.
func (w *Worker) newRun(ctx context.Context) (*run, error) {
	r := &run{w: w, id: nuid.Next(), cancels: cancels{keep: w.cfg.KeepCompleted, caughtUp: make(chan struct{})}}
	r.promoter.init(r, w.cfg.ClaimAfter)
	r.ahead.init(r, maxAhead(w.cfg.ClaimWait))
	leases, err := kv.Open(w.names.leaseBucket, kv.Config{Bind: true, JetStreamAPI: w.cfg.JetStreamAPI, Events: w.cfg.Events}, w.src, codec.String{})
	if err != nil {
		return nil, err
	}
	// Should the bucket go missing, a lock declares it again as the queue
	// does: with expiry markers for the recoverer's watch. Both keys name
	// this process beside the lease.
	lockCfg := kv.LockConfig{Bucket: w.names.leaseBucket, TTL: w.cfg.LeaseTTL, RenewEvery: w.cfg.Heartbeat,
		Storage: w.cfg.Storage, Replicas: w.cfg.Replicas, LimitMarkerTTL: w.cfg.LeaseTTL, Value: w.cfg.Process,
		Placement: w.cfg.Placement, JetStreamAPI: w.cfg.JetStreamAPI, Events: w.cfg.Events}
	lockCfg.Key = leaseKey(r.id)
	own, err := kv.NewLock(lockCfg, w.src)
	if err != nil {
		return nil, err
	}
	lockCfg.Key = recovererKey
	elect, err := kv.NewLock(lockCfg, w.src)
	if err != nil {
		return nil, err
	}
	lease, ok, err := own.TryAcquire(ctx)
	switch {
	case err != nil:
		return nil, fmt.Errorf("take a lease: %w", err)
	case !ok:
		return nil, fmt.Errorf("take a lease: %s is held already", leaseKey(r.id))
	}
	r.lease = lease
	slots, prefetch := w.cfg.MaxConcurrency, max(w.cfg.Prefetch, 0)
	// Timeout bounds the handler's run alone (see Handle): a claim and an
	// outcome's writes go on until the worker stops.
	r.pool = pool.New[*delivery](pool.Config{Workers: slots, QueueSize: slots + prefetch, Stats: &w.runs}, r)
	// No pull request outlives the lease: a worker paused with some out
	// would otherwise be delivered the very tasks recovered from it.
	r.puller = pull.New(pull.Config{APIPrefix: w.cfg.JetStreamAPI.Prefix(), Stream: w.cfg.Stream, Consumers: consumerNames(),
		Capacity: slots + prefetch, Want: func() int { return slots + min(prefetch, r.aheadNow()) },
		Peak: &r.peakHeld, Source: w.src, Feed: r.pool.Feed, Until: lease.Deadline, Recovered: w.pullRecovered}, r)
	r.recoverer = &recoverer{queue: w.queue, worker: r.id, leases: leases, lock: elect, src: w.src, every: w.cfg.SweepEvery,
		minAge: w.cfg.LeaseTTL,
		events: w.events, failed: w.queueError, ledger: r.ledger, recovered: &w.stats.recovered, retire: r.retire}
	r.connected = make(chan struct{})
	return r, nil
}

// held is how many copies the run holds: running, or waiting for a
// slot and not given back.
func (r *run) held() int { return max(r.puller.Held()-int(r.ahead.givenBack.Load()), 0) }

// aheadNow is how many tasks to take ahead now, Prefetch aside.
func (r *run) aheadNow() int {
	if r.w.ahead != nil {
		return r.w.ahead()
	}
	return r.pace.ahead(time.Now())
}

// holder is who holds the run's tasks: its lease, in this process.
func (r *run) holder() holder { return holder{worker: r.id, process: r.w.cfg.Process} }

// ledger is the protocol's writes on the current connection.
func (r *run) ledger() *ledger { return r.led.Load() }

// entitled reports whether the worker may still write about its tasks,
// and report failures: its lease has not been lost. It is asked while
// the run serves.
func (r *run) entitled() bool {
	if r.w.unfenced || r.lease.Valid() {
		return true
	}
	// The first to find the lease lost fences the run (after a pause, a
	// task may end before the run's watch of Lost has run), before it
	// lets go of its copy: LeaseLost counts every copy held at the loss.
	r.fence()
	return false
}

// lost reports whether the run's lease is lost.
func (r *run) lost() bool {
	select {
	case <-r.lease.Lost():
		return true
	default:
		return false
	}
}

// serve pulls and runs tasks, one connection after another, until ctx
// ends or the lease is lost; then it stops.
func (r *run) serve(ctx context.Context) error {
	w := r.w
	r.serving.Store(true)
	defer r.serving.Store(false)
	// Once Status reports the lease held, as the event says.
	w.events.Emit(LeaseAcquired{EventTime: w.events.Stamp(), Queue: w.queue, Worker: r.id, Process: w.cfg.Process,
		Capacity: w.cfg.MaxConcurrency})
	r.pool.Start()
	// The grace period is timed from when the stop was asked, as the
	// supervisor times the shutdown timeout.
	defer afterfunc.Run(ctx, r.beginStop)()
	pctx, stopPulling := context.WithCancel(ctx)
	defer stopPulling()
	var wg sync.WaitGroup
	wg.Go(func() {
		select { // the recoverer writes through the run's ledger
		case <-r.connected:
			r.recoverer.run(pctx)
		case <-pctx.Done():
		}
	})
	wg.Go(func() { r.watchCancels(pctx) })
	wg.Go(func() { r.flushProgress(pctx) })
	// A lease lost at any time until the tasks have stopped, their grace
	// included, cuts them off at once.
	stopped := make(chan struct{})
	wg.Go(func() {
		select {
		case <-r.lease.Lost():
			r.fence()
			stopPulling()
		case <-stopped:
		}
	})
	r.awaitCancels(pctx)
	err := r.pullAll(pctx)
	if ctx.Err() != nil || r.fenced.Load() {
		err = nil
	}
	r.stop()
	close(stopped)
	stopPulling()
	wg.Wait()
	if r.fenced.Load() {
		return ErrLeaseLost
	}
	rctx, cancel := releaseCtx(ctx, w.src)
	defer cancel()
	if rerr := r.lease.Release(rctx); rerr != nil && err == nil && ctx.Err() == nil {
		err = rerr
	}
	return err
}

// awaitCancels waits, before the worker takes tasks, until it knows the
// queue's cancels, so that no copy of a task cancelled before runs before
// its claim (see lazy). A watch that takes longer than jsapi.Timeout is
// not waited for: until it is current, every task is claimed first.
func (r *run) awaitCancels(ctx context.Context) {
	if r.w.cfg.ClaimAfter <= 0 {
		return
	}
	t := time.NewTimer(jsapi.Timeout)
	defer t.Stop()
	select {
	case <-r.cancels.caughtUp:
	case <-t.C:
	case <-ctx.Done():
	}
}

// pullAll pulls on the current connection, and on its replacement when it
// is replaced, until ctx ends or the queue cannot be pulled from.
func (r *run) pullAll(ctx context.Context) error {
	for {
		nc, gone, err := r.w.src.Conn(ctx)
		if err != nil {
			return err
		}
		if err := r.useConn(ctx, nc); err != nil {
			return err
		}
		session, err := r.puller.Open(nc)
		if err == nil {
			js := r.ledger().js
			err = session.Run(ctx, js, gone)
			if ctx.Err() != nil {
				r.beginStop()
			}
			session.Drain(r.drainBy())
		}
		if !errors.Is(err, jsapi.ErrConnGone) || ctx.Err() != nil {
			return err
		}
	}
}

// useConn points the run's writes at nc.
func (r *run) useConn(ctx context.Context, nc *nats.Conn) error {
	// Claims and outcomes are published asynchronously and awaited, which
	// costs a third less than a request each; every task holds at most one
	// at a time, and none waits past jsapi.Timeout for its answer.
	js, err := r.w.cfg.JetStreamAPI.New(nc, jetstream.WithPublishAsyncTimeout(jsapi.Timeout),
		jetstream.WithPublishAsyncMaxPending(2*r.w.cfg.MaxConcurrency+asyncSlack))
	if err != nil {
		return err
	}
	// Asked again while unanswered: a request sent while the stream's
	// servers are out of reach (a gateway or leaf link down) gets no
	// answer at all, and one try must not take the whole timeout.
	lctx, cancel := context.WithTimeout(ctx, jsapi.Timeout)
	defer cancel()
	held, err := jsapi.Ask(lctx, func(ctx context.Context) (jetstream.Stream, error) { return js.Stream(ctx, r.w.names.heldStream) })
	if err != nil {
		return fmt.Errorf("stream %s: %w", r.w.names.heldStream, err)
	}
	first := r.led.Swap(&ledger{js: js, held: held, names: r.w.names,
		keep: r.w.cfg.KeepCompleted, keepResults: r.w.cfg.KeepResults, dies: r.w.dies}) == nil
	if first {
		close(r.connected)
	}
	return nil
}

// asyncSlack is room in nats.go's window of asynchronous publishes beyond
// two per task held: the recoverer's put-backs.
const asyncSlack = 256

// fence stops every task at once, even in a stop's grace period: the
// lease can no longer be counted on, and the tasks are about to be
// another's. It reports the loss then, with what the worker holds: once
// the tasks have stopped it holds nothing, and a handler that ignores its
// ctx would hold the report back. Only the first call does anything.
func (r *run) fence() {
	r.fenceOnce.Do(func() {
		held := r.held()
		r.fenced.Store(true)
		r.stopBy.CompareAndSwap(0, time.Now().UnixNano())
		r.pool.Cut()
		r.w.stats.leasesLost.Add(1)
		r.w.events.Emit(LeaseLost{EventTime: r.w.events.Stamp(), Queue: r.w.queue, Worker: r.id, Process: r.w.cfg.Process,
			Held: held})
	})
}

// beginStop starts a stop's grace period: no task starts any more, and
// what runs may finish until it ends.
func (r *run) beginStop() {
	r.stopBy.CompareAndSwap(0, time.Now().Add(r.w.cfg.Restart.Grace()).UnixNano())
	r.pool.Abort()
}

// drainBy is when draining the inboxes must end.
func (r *run) drainBy() time.Time {
	if by := r.stopBy.Load(); by != 0 {
		return time.Unix(0, by)
	}
	return time.Time{}
}

// stop ends the pool: queued copies go back to the queue, running tasks
// finish until the grace ends (at once when fenced), then their ctx is
// cancelled, and what was cut off is put back (unless fenced).
func (r *run) stop() {
	r.beginStop()
	r.pool.Stop(time.Unix(0, r.stopBy.Load()))
	r.promoter.stop()
	r.ahead.stop()
}

// releaseCtx bounds the release of a lease by a stopping worker: to
// jsapi.Timeout, and to no later than its connection's supervisor
// stopping (a tree that stops its children all at once): waiting for a
// connection then would wait out the timeout for nothing, and the lease
// expires by itself.
// The CancelFunc returned waits for the watch it starts.
func releaseCtx(parent context.Context, src connection.Source) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(parent), jsapi.Timeout)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			st, changed := src.Observe()
			if st.State == connection.StateStopped {
				cancel()
				return
			}
			select {
			case <-ctx.Done():
				return
			case <-changed:
			}
		}
	}()
	return ctx, func() {
		cancel()
		<-done
	}
}
