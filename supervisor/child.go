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
	// failedDelays holds the restart delay of each failure not yet
	// reported by the tree's hook, oldest first.
	failedDelays []time.Duration
}

func (c *child) String() string { return c.name }

func (c *child) reset() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.starts, c.consecutive, c.delay, c.failedDelays = 0, 0, 0, nil
	c.status = ChildStatus{Name: c.name, State: Stopped, Since: c.tree.now(), Policy: c.policy}
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
	restarts := c.starts
	c.starts++
	c.serving = true
	c.status.Restarts = restarts
	c.setStateLocked(Running)
	c.mu.Unlock()
	c.tree.emit(ChildStarted{EventTime: c.tree.stamp(), Child: c.name, Restarts: restarts})

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
	d := c.policy.RestartDelay << min(c.consecutive-1, 30)
	if d <= 0 || d > c.policy.Backoff {
		d = c.policy.Backoff
	}
	c.delay = jitter{frac: *c.policy.Jitter, rnd: c.tree.rnd}.Jitter(d)
	// suture reports this failure to the tree's hook, which takes the
	// delay from here: by then the next run may have begun.
	c.failedDelays = append(c.failedDelays, c.delay)
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

// takeFailedDelay returns the restart delay of the oldest failure not yet
// reported.
func (c *child) takeFailedDelay() time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.failedDelays) == 0 {
		return 0
	}
	d := c.failedDelays[0]
	c.failedDelays = c.failedDelays[1:]
	return d
}

// pauseReplacesDelay drops the child's own restart delay when its
// supervisor pauses: the pause is the longer wait, and waiting both would
// double it.
func (c *child) pauseReplacesDelay() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.delay = 0
	if n := len(c.failedDelays); n > 0 {
		c.failedDelays[n-1] = 0 // the failure that caused the pause
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
