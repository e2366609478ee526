package supervisor

import (
	"context"
	"errors"
	"runtime/debug"
	"sync"
	"time"

	"github.com/thejerf/suture/v4"
)

// State is where a child is in its life.
type State string

const (
	// Running means the child's Serve is running.
	Running State = "running"
	// BackingOff means the child failed and waits to be restarted.
	BackingOff State = "backing off"
	// Stopped means the child is not running and did not fail: the tree is not
	// serving, or it ended cleanly and is not restarted.
	Stopped State = "stopped"
	// Failed means the child failed and will not be restarted (temporary or
	// transient).
	Failed State = "failed"
)

// ChildStatus is a snapshot of one child.
type ChildStatus struct {
	Name  string
	State State
	// Since is when the child entered State.
	Since time.Time
	// Restarts counts how often the child was started again after its
	// first start in the current Serve.
	Restarts int
	// LastError is the child's most recent failure; LastErrorAt its time.
	LastError   string
	LastErrorAt time.Time
	// Policy is the resolved restart policy.
	Policy Policy
}

// child wraps a service with its restart policy and its status.
type child struct {
	name   string
	svc    suture.Service
	policy Policy
	tree   *Tree

	mu          sync.Mutex
	status      ChildStatus
	serving     bool
	starts      int
	consecutive int
	delay       time.Duration
	// unreported holds what the tree's hook reports of each failure
	// suture has not reported yet, oldest first.
	unreported []failure
	// The failure episode: the failures since the child last started
	// successfully (see Starter), the last one's text, and how many in a
	// row repeated it. startedOK says the current run has started.
	episode   int
	lastErr   string
	repeated  int
	startedOK bool
}

// failure is what ChildFailed reports of one failure, beside suture's.
type failure struct {
	restartIn time.Duration
	failures  int
	repeated  int
}

func (c *child) String() string { return c.name }

func (c *child) reset() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.starts, c.consecutive, c.delay, c.unreported = 0, 0, 0, nil
	c.episode, c.lastErr, c.repeated, c.startedOK = 0, "", 0, false
	c.status = ChildStatus{Name: c.name, State: Stopped, Since: c.tree.now(), Policy: c.policy}
}

// started ends the child's failure episode, if any: the current run has
// started successfully. A Starter's service calls it.
func (c *child) started() {
	c.mu.Lock()
	if !c.serving || c.startedOK {
		c.mu.Unlock()
		return
	}
	c.startedOK = true
	failures := c.episode
	c.episode, c.lastErr, c.repeated = 0, "", 0
	c.mu.Unlock()
	if failures > 0 {
		c.tree.emit(ChildRecovered{EventTime: c.tree.stamp(), Child: c.name, Failures: failures})
	}
}

// countFailureLocked counts a failure of a run that lasted ran in the
// child's episode: a run that started successfully, or lasted longer than
// FailureDecay, ends the one before.
func (c *child) countFailureLocked(err error, ran time.Duration) {
	if c.startedOK || ran > c.policy.FailureDecay {
		c.episode, c.lastErr, c.repeated = 0, "", 0
	}
	text := err.Error()
	if c.episode > 0 && text == c.lastErr {
		c.repeated++
	} else {
		c.repeated = 0
	}
	c.episode++
	c.lastErr = text
}

// Serve runs the wrapped service once, applying the restart policy to how
// it ended. suture calls it again when it returns anything but
// ErrDoNotRestart, after the child's supervisor's own backoff.
func (c *child) Serve(ctx context.Context) error {
	if d := c.pendingDelay(); d > 0 {
		c.setState(BackingOff)
		t := time.NewTimer(d)
		select {
		case <-ctx.Done():
			t.Stop()
			c.finish(Stopped, nil)
			return ctx.Err()
		case <-t.C:
		}
	}

	c.mu.Lock()
	restarts, repeated := c.starts, c.repeated
	c.starts++
	c.serving = true
	c.startedOK = false
	c.status.Restarts = restarts
	c.setStateLocked(Running)
	c.mu.Unlock()
	c.tree.emit(ChildStarted{EventTime: c.tree.stamp(), Child: c.name, Restarts: restarts, Repeated: repeated})

	start := c.tree.now()
	err := c.run(ctx)
	ran := c.tree.now().Sub(start)

	if ctx.Err() != nil {
		if isStopErr(err) {
			err = nil
		}
		c.finish(Stopped, err)
		c.tree.emit(ChildStopped{EventTime: c.tree.stamp(), Child: c.name, Err: err})
		return ctx.Err()
	}
	switch {
	case errors.Is(err, suture.ErrTerminateSupervisorTree):
		// The child asks for the whole tree to stop; suture does that.
		c.finish(Failed, err)
		c.tree.emit(ChildStopped{EventTime: c.tree.stamp(), Child: c.name, Err: err})
		return err
	case errors.Is(err, suture.ErrDoNotRestart):
		// One-shot work that is done: not a failure, whatever the mode.
		c.finish(Stopped, nil)
		c.tree.emit(ChildStopped{EventTime: c.tree.stamp(), Child: c.name})
		return err
	case c.policy.Mode == Temporary, c.policy.Mode == Transient && err == nil:
		state := Stopped
		if err != nil {
			state = Failed
		}
		c.finish(state, err)
		c.tree.emit(ChildStopped{EventTime: c.tree.stamp(), Child: c.name, Err: err})
		return errors.Join(suture.ErrDoNotRestart, err)
	case err == nil:
		err = ErrReturned
	}

	c.mu.Lock()
	defer c.mu.Unlock()
	if ran > c.policy.FailureDecay {
		c.consecutive = 0
	}
	c.consecutive++
	c.delay = jitter{frac: *c.policy.Jitter, rnd: c.tree.rnd}.Jitter(c.policy.delay(c.consecutive))
	c.countFailureLocked(err, ran)
	// suture reports this failure to the tree's hook, which takes the
	// rest from here: by then the next run may have begun.
	c.unreported = append(c.unreported, failure{restartIn: c.delay, failures: c.episode, repeated: c.repeated})
	c.serving = false
	c.recordErrorLocked(err)
	c.setStateLocked(BackingOff)
	return err
}

// run calls the service, turning a panic into a *PanicError so that the
// failure is counted, logged with its stack, and restarted like any other.
func (c *child) run(ctx context.Context) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = &PanicError{Value: r, Stack: debug.Stack()}
		}
	}()
	return c.svc.Serve(ctx)
}

func (c *child) pendingDelay() time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.delay
}

// takeFailure returns what is known of the oldest failure not yet
// reported.
func (c *child) takeFailure() failure {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.unreported) == 0 {
		return failure{failures: max(c.episode, 1), repeated: c.repeated}
	}
	f := c.unreported[0]
	c.unreported = c.unreported[1:]
	return f
}

// repeating returns how many failures in a row repeated the episode's
// last one.
func (c *child) repeating() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.repeated
}

// pauseReplacesDelay drops the child's own restart delay when its
// supervisor pauses: the pause is the longer wait, and waiting both would
// double it.
func (c *child) pauseReplacesDelay() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.delay = 0
	if n := len(c.unreported); n > 0 {
		c.unreported[n-1].restartIn = 0 // the failure that caused the pause
	}
	c.setStateLocked(BackingOff)
}

func (c *child) isServing() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.serving
}

func (c *child) finish(s State, err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.serving = false
	c.delay = 0
	if err != nil {
		c.recordErrorLocked(err)
	}
	c.setStateLocked(s)
}

func (c *child) setState(s State) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.setStateLocked(s)
}

func (c *child) setStateLocked(s State) {
	if c.status.State != s {
		c.status.State = s
		c.status.Since = c.tree.now()
	}
}

func (c *child) recordErrorLocked(err error) {
	c.status.LastError = err.Error()
	c.status.LastErrorAt = c.tree.now()
}

func (c *child) snapshot() ChildStatus {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.status
}
