package supervisor

import (
	"context"
	"errors"
	"math"
	"time"

	"github.com/thejerf/suture/v4"
)

// Serve runs the service, starting it again after each failure as the
// policy says, until ctx ends, the tree halts the child, or the policy
// ends it. It returns ctx.Err() once ctx ended, an error wrapping
// suture.ErrDoNotRestart once the child ended for good or was halted, or
// one wrapping suture.ErrTerminateSupervisorTree when the service asked
// for that.
//
// The restart rule is suture's, applied here so that a child costs one
// goroutine and not a supervisor of its own: each failure waits
// RestartDelay, doubled per failure in a row; a failure count that
// halves every FailureDecay and passes FailureThreshold pauses the child
// for Backoff instead.
func (c *child) Serve(ctx context.Context) error {
	ctx, run := c.enter(ctx)
	defer c.exit(run)
	for {
		wait, paused, end := c.once(ctx)
		if end != nil {
			return c.endErr(ctx, end)
		}
		if !c.pause(ctx, wait, paused) {
			c.finish(Stopped, nil)
			return c.endErr(ctx, ctx.Err())
		}
	}
}

// endErr is what Serve returns for end: a halt is not a failure of the
// tree's root, which would restart the child.
func (c *child) endErr(ctx context.Context, end error) error {
	if ctx.Err() != nil && context.Cause(ctx) == errHalted {
		return errors.Join(suture.ErrDoNotRestart, end)
	}
	return end
}

var errHalted = errors.New("supervisor: child halted")

// once runs the service one time and says what comes next: end is
// non-nil when the child is done (see Serve); otherwise it starts again
// after wait, a pause past the threshold when paused.
func (c *child) once(ctx context.Context) (wait time.Duration, paused bool, end error) {
	c.recordStart()
	start := c.tree.now()
	err := c.run(ctx)
	ran := c.tree.now().Sub(start)
	if ctx.Err() != nil {
		if isStopErr(err) {
			err = nil
		}
		c.recordEnd(Stopped, err)
		return 0, false, ctx.Err()
	}
	if end := c.endOf(err); end != nil {
		return 0, false, end
	}
	if err == nil {
		err = ErrReturned
	}
	wait, paused = c.recordFailure(err, ran)
	return wait, paused, nil
}

// recordStart marks the child running for a new run and emits
// ChildStarted.
func (c *child) recordStart() {
	c.mu.Lock()
	restarts, repeated := c.starts, c.repeated
	c.starts++
	c.serving = true
	c.startedOK = false
	c.status.Restarts = restarts
	c.setStateLocked(Running)
	c.mu.Unlock()
	c.tree.emit(ChildStarted{EventTime: c.tree.stamp(), Child: c.name, Restarts: restarts, Repeated: repeated})
}

// endOf returns the error Serve ends with when a run that returned err,
// while ctx is live, ends the child for good, having recorded that and
// emitted ChildStopped; nil when the policy restarts the child.
func (c *child) endOf(err error) error {
	switch {
	case errors.Is(err, suture.ErrTerminateSupervisorTree):
		// The child asks for the whole tree to stop; suture does that.
		c.recordEnd(Failed, err)
		return err
	case errors.Is(err, suture.ErrDoNotRestart):
		// One-shot work that is done: not a failure, whatever the mode.
		c.recordEnd(Stopped, nil)
		return err
	case c.policy.Mode == Temporary, c.policy.Mode == Transient && err == nil:
		state := Stopped
		if err != nil {
			state = Failed
		}
		c.recordEnd(state, err)
		return errors.Join(suture.ErrDoNotRestart, err)
	}
	return nil
}

// recordEnd records that the child's run ended in state s, with err if
// it failed, and emits ChildStopped.
func (c *child) recordEnd(s State, err error) {
	c.finish(s, err)
	c.tree.emit(ChildStopped{EventTime: c.tree.stamp(), Child: c.name, Err: err})
}

// recordFailure counts a failure, err, of a run that lasted ran, and
// emits ChildFailed, and ChildBackoff when the failures passed the
// threshold (paused). It returns the wait before the next start.
func (c *child) recordFailure(err error, ran time.Duration) (wait time.Duration, paused bool) {
	c.mu.Lock()
	wait, paused = c.restartWaitLocked(ran)
	c.countFailureLocked(err, ran)
	ev := ChildFailed{EventTime: c.tree.stamp(), Child: c.name, Err: err, Failures: c.episode,
		Repeated: c.repeated, Threshold: c.policy.FailureThreshold, Restarting: !paused}
	if !paused {
		ev.RestartIn = wait
	}
	c.serving = false
	c.recordErrorLocked(err)
	c.setStateLocked(BackingOff)
	c.mu.Unlock()
	c.tree.emit(ev)
	if paused {
		c.tree.emit(ChildBackoff{EventTime: c.tree.stamp(), Child: c.name, Backoff: c.policy.Backoff, Repeated: ev.Repeated})
	}
	return wait, paused
}

// restartWaitLocked counts a failure of a run that lasted ran in the
// policy's two counts, and returns the wait before the next start:
// RestartDelay doubled per failure in a row (a run longer than
// FailureDecay ends the row), or, once the count that halves every
// FailureDecay passes FailureThreshold (paused), Backoff.
func (c *child) restartWaitLocked(ran time.Duration) (wait time.Duration, paused bool) {
	if ran > c.policy.FailureDecay {
		c.consecutive = 0
	}
	c.consecutive++
	wait = jitter{frac: *c.policy.Jitter, rnd: c.tree.rnd}.Jitter(c.policy.delay(c.consecutive))
	// The real clock, as suture's: Events.Clock only stamps.
	now := time.Now()
	if c.lastFail.IsZero() {
		c.recent = 1
	} else {
		c.recent = c.recent*math.Pow(.5, now.Sub(c.lastFail).Seconds()/c.policy.FailureDecay.Seconds()) + 1
	}
	c.lastFail = now
	paused = c.recent > c.policy.FailureThreshold
	if paused {
		// The pause is the longer wait; waiting the delay too would
		// double it.
		wait = jitter{frac: *c.policy.Jitter, rnd: c.tree.rnd}.Jitter(c.policy.Backoff)
	}
	return wait, paused
}

// pause waits d before the next start, and reports whether ctx is still
// live. A pause past the threshold ends with ChildResumed and a fresh
// failure count, as suture's does.
func (c *child) pause(ctx context.Context, d time.Duration, paused bool) bool {
	if d > 0 {
		t := time.NewTimer(d)
		select {
		case <-ctx.Done():
			t.Stop()
			return false
		case <-t.C:
		}
	}
	if ctx.Err() != nil {
		return false
	}
	if paused {
		c.mu.Lock()
		c.recent = 0
		repeated := c.repeated
		c.mu.Unlock()
		c.tree.emit(ChildResumed{EventTime: c.tree.stamp(), Child: c.name, Repeated: repeated})
	}
	return true
}

// enter begins the child's loop in the current Serve of its tree, on a
// context the tree can halt alone, and returns the run it belongs to. A
// child halted before its loop began still runs once, on an ended
// context, as suture runs a service added to a supervisor that is
// stopping: a service may have work to report at its stop (the
// publisher's buffered messages).
func (c *child) enter(ctx context.Context) (context.Context, *childRun) {
	c.mu.Lock()
	defer c.mu.Unlock()
	run := c.cur
	if run.done() {
		// The root runs a loop again that failed by itself (which only a
		// bug would make it do): a run of its own, for halt to wait on.
		run = &childRun{halted: run.halted, exited: make(chan struct{})}
		c.cur = run
	}
	ctx, cancel := context.WithCancelCause(ctx)
	run.cancel = func() { cancel(errHalted) }
	if run.halted {
		run.cancel()
	}
	return ctx, run
}

// exit ends run's loop, which enter began: whoever waits for it to stop
// may go on. It touches only run, never a later Serve's.
func (c *child) exit(run *childRun) {
	c.mu.Lock()
	defer c.mu.Unlock()
	run.cancel()
	run.cancel = nil
	close(run.exited)
}

// halt stops the loop of the child's current run, and returns a channel
// closed once it has returned.
func (c *child) halt() <-chan struct{} {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.cur.halted = true
	if c.cur.cancel != nil {
		c.cur.cancel()
	}
	return c.cur.exited
}

// errOverran marks a child that did not stop within its shutdown
// timeout.
var errOverran = errors.New("did not stop within its shutdown timeout")

// awaitStop waits up to d for exited, or until ctx ends. It returns nil
// when the child stopped in time, ctx.Err() when ctx ended first, and
// errOverran, after emitting ChildStopTimeout, when d passed.
func (c *child) awaitStop(ctx context.Context, d time.Duration, exited <-chan struct{}) error {
	select {
	case <-exited:
		return nil
	default:
	}
	if d > 0 {
		t := time.NewTimer(d)
		defer t.Stop()
		select {
		case <-exited:
			return nil
		case <-ctx.Done():
			return ctx.Err()
		case <-t.C:
		}
	}
	c.tree.emit(ChildStopTimeout{EventTime: c.tree.stamp(), Child: c.name, Timeout: c.policy.ShutdownTimeout})
	return errOverran
}
