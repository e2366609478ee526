package supervisor

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"sync"
	"time"

	"github.com/thejerf/suture/v4"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"

	"github.com/corral-go/corral/internal/logfield"
)

// Tree is a root supervisor whose children each run under their own suture
// supervisor, so that each has its own restart policy: suture counts
// failures and pauses restarts per supervisor, and one flapping child must
// not pause its siblings.
//
// Children stop in the reverse order they were added, each within its
// shutdown timeout, so dependents (added after what they depend on) stop
// first. suture alone would stop them all at once.
type Tree struct {
	name       string
	log        *zap.Logger
	hook       Hook
	rnd        func() float64
	now        func() time.Time
	concurrent bool // stop all children at once

	mu        sync.Mutex
	children  []*child
	byName    map[string]*child
	running   bool
	unstopped []string
}

// NewTree returns an empty tree named name whose events go where events
// says.
func NewTree(name string, events Events) *Tree {
	t := &Tree{name: name, log: events.Logger, hook: events.Hook, rnd: rand.Float64, now: events.Clock, byName: map[string]*child{}}
	if t.log == nil {
		t.log = zap.NewNop()
	}
	if t.now == nil {
		t.now = time.Now
	}
	return t
}

// NewGroup returns an empty tree whose children are independent of each
// other: at shutdown they all stop at once, each within its own timeout.
func NewGroup(name string, events Events) *Tree {
	t := NewTree(name, events)
	t.concurrent = true
	return t
}

// String returns the tree's name.
func (t *Tree) String() string { return t.name }

// Add adds a child named name that runs svc under policy p, whose zero
// fields take the package defaults. Children can only be added while the
// tree is not serving.
func (t *Tree) Add(name string, svc suture.Service, p Policy) error {
	if err := p.Validate(); err != nil {
		return fmt.Errorf("supervisor: child %q: %w", name, err)
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.running {
		return ErrRunning
	}
	if _, dup := t.byName[name]; dup {
		return fmt.Errorf("%w: %q", ErrDuplicateChild, name)
	}
	c := &child{name: name, svc: svc, policy: p.Inherit(Defaults()), tree: t}
	c.status = ChildStatus{Name: name, State: Stopped, Policy: c.policy}
	if s, ok := svc.(Starter); ok {
		s.OnStarted(c.started)
	}
	t.children = append(t.children, c)
	t.byName[name] = c
	return nil
}

// SetPolicy replaces the policy of the child named name, whose zero fields
// take the package defaults. Only while the tree is not serving.
func (t *Tree) SetPolicy(name string, p Policy) error {
	if err := p.Validate(); err != nil {
		return fmt.Errorf("supervisor: child %q: %w", name, err)
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.running {
		return ErrRunning
	}
	c, ok := t.byName[name]
	if !ok {
		return fmt.Errorf("supervisor: no child %q", name)
	}
	c.policy = p.Inherit(Defaults())
	c.status.Policy = c.policy
	return nil
}

// Serve runs every child until ctx ends, then stops them in reverse order
// of Add. It returns ctx.Err() after a clean stop, an error wrapping
// ErrShutdownIncomplete (and ctx.Err()) when a child did not stop in time,
// or the error that made a child terminate the whole tree. A tree can be
// served again after Serve returns.
func (t *Tree) Serve(ctx context.Context) error {
	t.mu.Lock()
	if t.running {
		t.mu.Unlock()
		return ErrRunning
	}
	for _, c := range t.children {
		if c.isServing() {
			// Left running by a shutdown that timed out: a second copy
			// must not start beside it.
			t.mu.Unlock()
			return fmt.Errorf("%w: %s is still stopping", ErrRunning, c.name)
		}
	}
	t.running = true
	t.unstopped = nil
	children := append([]*child(nil), t.children...)
	t.mu.Unlock()
	defer func() {
		t.mu.Lock()
		t.running = false
		t.mu.Unlock()
	}()

	if len(children) == 1 {
		return t.serveOne(ctx, children[0])
	}
	var longest time.Duration
	for _, c := range children {
		longest = max(longest, c.policy.ShutdownTimeout)
	}
	root := suture.New(t.name, suture.Spec{
		EventHook: t.onSutureEvent,
		Timeout:   longest + time.Second,
	})
	tokens := make([]suture.ServiceToken, len(children))
	for i, c := range children {
		c.reset()
		sup := suture.New(c.name, c.policy.spec(t.rnd))
		sup.Add(c)
		tokens[i] = root.Add(sup)
	}

	// The root runs on its own context so that ctx ending does not stop
	// every child at once; the ordered stop below cancels it last.
	rootCtx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	defer cancel()
	done := root.ServeBackground(rootCtx)
	select {
	case <-ctx.Done():
	case err := <-done:
		return fmt.Errorf("supervisor: tree %s terminated: %w", t.name, err)
	}

	unstopped := t.stopChildren(root, tokens, children)
	cancel()
	<-done

	t.mu.Lock()
	t.unstopped = unstopped
	t.mu.Unlock()
	if len(unstopped) > 0 {
		return fmt.Errorf("%w: %s: %w", ErrShutdownIncomplete, strings.Join(unstopped, ", "), ctx.Err())
	}
	return ctx.Err()
}

// serveOne serves a tree of one child: the child's own supervisor runs on
// this goroutine as the root. With no siblings to stop in order, a root
// above it, and a goroutine waiting on that, would cost two goroutines
// for nothing.
func (t *Tree) serveOne(ctx context.Context, c *child) error {
	c.reset()
	spec := c.policy.spec(t.rnd)
	spec.EventHook = t.onSutureEvent
	sup := suture.New(c.name, spec)
	sup.Add(c)
	err := sup.Serve(ctx)
	if ctx.Err() == nil {
		return fmt.Errorf("supervisor: tree %s terminated: %w", t.name, err)
	}
	var unstopped []string
	if c.isServing() {
		unstopped = []string{c.name}
	}
	t.mu.Lock()
	t.unstopped = unstopped
	t.mu.Unlock()
	if len(unstopped) > 0 {
		return fmt.Errorf("%w: %s: %w", ErrShutdownIncomplete, c.name, ctx.Err())
	}
	return ctx.Err()
}

// stopChildren stops the children in reverse order of Add (all at once
// in a group), each within its shutdown timeout, and names those that did
// not stop in time.
func (t *Tree) stopChildren(root *suture.Supervisor, tokens []suture.ServiceToken, children []*child) []string {
	stopped := make([]bool, len(children))
	stop := func(i int) {
		// No timeout of our own: each child's supervisor already gives up
		// on its service after the child's ShutdownTimeout, so this wait is
		// bounded. With one, a stop that overran it (a loaded machine) left
		// suture's notifier blocked for ever on a channel nobody read.
		err := root.RemoveAndWait(tokens[i], 0)
		stopped[i] = err == nil && !children[i].isServing()
	}
	if t.concurrent {
		var wg sync.WaitGroup
		for i := range children {
			wg.Go(func() { stop(i) })
		}
		wg.Wait()
	} else {
		for i := len(children) - 1; i >= 0; i-- {
			stop(i)
		}
	}
	var unstopped []string
	for i, c := range children {
		if !stopped[i] {
			unstopped = append(unstopped, c.name)
		}
	}
	return unstopped
}

// Status returns a snapshot of every child, in the order they were added.
func (t *Tree) Status() []ChildStatus {
	t.mu.Lock()
	children := append([]*child(nil), t.children...)
	t.mu.Unlock()
	out := make([]ChildStatus, len(children))
	for i, c := range children {
		out[i] = c.snapshot()
	}
	return out
}

// Unstopped names the children that had not stopped when the last Serve
// returned; empty after a clean shutdown.
func (t *Tree) Unstopped() []string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return append([]string(nil), t.unstopped...)
}

func (t *Tree) child(name string) *child {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.byName[name]
}

// onSutureEvent turns suture's events into ours. Each child runs alone
// under a supervisor of its own name, so SupervisorName names the child.
func (t *Tree) onSutureEvent(e suture.Event) {
	at := t.stamp()
	switch e := e.(type) {
	case suture.EventServiceTerminate:
		name := e.SupervisorName
		if name == t.name {
			name = e.ServiceName
		}
		ev := ChildFailed{EventTime: at, Child: name, Err: asError(e.Err), Failures: 1,
			Threshold: e.FailureThreshold, Restarting: e.Restarting}
		if c := t.child(name); c != nil {
			f := c.takeFailure()
			ev.RestartIn, ev.Failures, ev.Repeated = f.restartIn, f.failures, f.repeated
		}
		t.emit(ev)
	case suture.EventServicePanic:
		// Not reached while child.run recovers panics: kept so that none
		// goes unreported.
		name := e.SupervisorName
		if name == t.name {
			name = e.ServiceName
		}
		t.emit(ChildFailed{EventTime: at, Child: name,
			Err:      &PanicError{Value: e.PanicMsg, Stack: []byte(e.Stacktrace)},
			Failures: max(int(math.Round(e.CurrentFailures)), 1), Threshold: e.FailureThreshold, Restarting: e.Restarting})
	case suture.EventBackoff:
		if c := t.child(e.SupervisorName); c != nil {
			c.pauseReplacesDelay()
			t.emit(ChildBackoff{EventTime: at, Child: c.name, Backoff: c.policy.Backoff, Repeated: c.repeating()})
		}
	case suture.EventResume:
		if c := t.child(e.SupervisorName); c != nil {
			t.emit(ChildResumed{EventTime: at, Child: c.name, Repeated: c.repeating()})
		}
	case suture.EventStopTimeout:
		name := e.SupervisorName
		if name == t.name {
			name = e.ServiceName
		}
		ev := ChildStopTimeout{EventTime: at, Child: name}
		if c := t.child(name); c != nil {
			ev.Timeout = c.policy.ShutdownTimeout
		}
		t.emit(ev)
	}
}

// emit logs ev and passes it to the hook, as every component's events are.
func (t *Tree) emit(ev Event) {
	logfield.Write(t.log, zapcore.Level(ev.Level()), ev.Kind(), ev)
	if t.hook != nil {
		t.hook(ev)
	}
}

func (t *Tree) stamp() EventTime { return EventTime{At: t.now()} }

func asError(v any) error {
	switch v := v.(type) {
	case nil:
		return nil
	case error:
		return v
	default:
		return fmt.Errorf("%v", v)
	}
}

// isStopErr reports whether err only says that ctx ended.
func isStopErr(err error) bool {
	return errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded)
}
