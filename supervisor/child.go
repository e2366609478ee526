package supervisor

import (
	"context"
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

// child wraps a service with its restart policy and its status. Its
// Serve (restart.go) applies the policy: it runs the service again after
// each failure, so that one goroutine supervises one child.
type child struct {
	name   string
	svc    suture.Service
	policy Policy
	tree   *Tree

	mu          sync.Mutex
	status      ChildStatus
	serving     bool // the service's Serve is running
	starts      int
	consecutive int // failures in a row, for the doubling delay
	// The decayed failure count compared with the policy's threshold
	// (suture's rule), and the time of the last failure.
	recent   float64
	lastFail time.Time
	// The failure episode: the failures since the child last started
	// successfully (see Starter), the last one's text, and how many in a
	// row repeated it. startedOK says the current run has started.
	episode   int
	lastErr   string
	repeated  int
	startedOK bool
	// cur is the child's part in the current (or last) Serve of its
	// tree; nil before the first.
	cur *childRun
}

// childRun is the child's part in one Serve of its tree: halt stops its
// loop, exited is closed once the loop has returned.
type childRun struct {
	halted bool
	cancel context.CancelFunc
	exited chan struct{}
}

func (c *child) String() string { return c.name }

// reset readies the child for a Serve of its tree.
func (c *child) reset() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.starts, c.consecutive, c.recent, c.lastFail = 0, 0, 0, time.Time{}
	c.episode, c.lastErr, c.repeated, c.startedOK = 0, "", 0, false
	c.cur = &childRun{exited: make(chan struct{})}
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
	// Failures marked unavailable repeat one another: an outage reads as
	// one warning, whatever each attempt's error says.
	text := err.Error()
	if unavailable(err) {
		text = "unavailable"
	}
	if c.episode > 0 && text == c.lastErr {
		c.repeated++
	} else {
		c.repeated = 0
	}
	c.episode++
	c.lastErr = text
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

// stopping reports whether the loop of the child's last run has not
// returned yet: a new run must not start beside it.
func (c *child) stopping() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.cur != nil && !c.cur.done()
}

// done reports whether the run's loop has returned.
func (r *childRun) done() bool {
	select {
	case <-r.exited:
		return true
	default:
		return false
	}
}

func (c *child) finish(s State, err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.serving = false
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
