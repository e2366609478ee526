package supervisor

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/thejerf/suture/v4"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"

	"github.com/corral-go/corral/internal/logfield"
)

// Tree is a root suture supervisor whose children each apply their own
// restart policy: each child runs in a loop on one goroutine that starts
// its service again after a failure, with suture's failure count and
// pause but its own, so that one flapping child never pauses its
// siblings. (A suture supervisor per child would do the same at the cost
// of a goroutine and a supervisor's state per child.)
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
		t.log = nopLogger
	}
	if t.now == nil {
		t.now = time.Now
	}
	return t
}

// nopLogger is the logger of a tree given none: one for all, as a
// thousand handlers each have a tree of their own.
var nopLogger = zap.NewNop()

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
	children, err := t.markRunning()
	if err != nil {
		return err
	}
	defer t.clearRunning()
	for _, c := range children {
		c.reset()
	}
	if len(children) == 1 {
		return t.serveOne(ctx, children[0])
	}
	return t.serveMany(ctx, children)
}

// markRunning marks the tree running and returns its children, unless it
// is running already, or a child left running by a shutdown that timed
// out is still stopping: a second copy must not start beside it.
func (t *Tree) markRunning() ([]*child, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.running {
		return nil, ErrRunning
	}
	for _, c := range t.children {
		if c.stopping() {
			return nil, fmt.Errorf("%w: %s is still stopping", ErrRunning, c.name)
		}
	}
	t.running = true
	t.unstopped = nil
	return append([]*child(nil), t.children...), nil
}

// clearRunning marks the tree no longer running.
func (t *Tree) clearRunning() {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.running = false
}

// serveMany serves a tree of several children. A suture root only runs
// each child's loop on a goroutine of its own and ends the tree when one
// asks; the loops restart their services, and the ordered stop
// (stopChildren) halts them one at a time, each within its own timeout.
// So the root waits for no child itself.
func (t *Tree) serveMany(ctx context.Context, children []*child) error {
	root := suture.New(t.name, suture.Spec{EventHook: t.onSutureEvent, Timeout: time.Millisecond})
	for _, c := range children {
		root.Add(c)
	}
	// The root runs on its own context so that ctx ending does not stop
	// every child at once; the ordered stop cancels it last, on a
	// goroutine that exists only once ctx has ended.
	rootCtx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	defer cancel()
	stopped := make(chan []string, 1)
	stopAfter := context.AfterFunc(ctx, func() {
		stopped <- t.stopChildren(children)
		cancel()
	})
	err := root.Serve(rootCtx)
	if stopAfter() {
		// A child ended the tree, and the root cancelled every child:
		// wait for them as a group stops.
		t.setUnstopped(t.haltAll(children))
		return fmt.Errorf("supervisor: tree %s terminated: %w", t.name, err)
	}
	unstopped := <-stopped
	t.setUnstopped(unstopped)
	if len(unstopped) > 0 {
		return fmt.Errorf("%w: %s: %w", ErrShutdownIncomplete, strings.Join(unstopped, ", "), ctx.Err())
	}
	return ctx.Err()
}

// setUnstopped records the children that had not stopped when Serve
// returned, for Unstopped.
func (t *Tree) setUnstopped(names []string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.unstopped = names
}

// serveOne serves a tree of one child: its loop runs on a goroutine of
// its own, and Serve's waits for ctx, then for the loop within the
// child's shutdown timeout. A root supervisor would only add a goroutine.
// A loop that overran is left to return by itself, as suture leaves a
// service; the child's run tracks it, and Serve refuses to start another
// beside it.
func (t *Tree) serveOne(ctx context.Context, c *child) error {
	ended := make(chan error, 1)
	go func() { ended <- t.serveChild(ctx, c) }()
	select {
	case err := <-ended:
		if ctx.Err() == nil {
			return err // the child terminated the tree
		}
	case <-ctx.Done():
	}
	if err := t.awaitOnly(context.Background(), c, c.policy.ShutdownTimeout, c.halt()); err != nil {
		return fmt.Errorf("%w: %w", err, ctx.Err())
	}
	return ctx.Err()
}

// serveChild runs c's loop until ctx ends. A child that ended for good
// leaves the tree serving, empty, as suture's root does; one that asks
// for the tree to end ends it at once, with an error.
func (t *Tree) serveChild(ctx context.Context, c *child) error {
	err := c.Serve(ctx)
	if ctx.Err() == nil {
		if !errors.Is(err, suture.ErrDoNotRestart) {
			return fmt.Errorf("supervisor: tree %s terminated: %w", t.name, err)
		}
		<-ctx.Done()
	}
	return ctx.Err()
}

// awaitOnly waits up to d for exited, the loop of the tree's only child
// c, or until ctx ends. When d passes first it records c as unstopped and
// returns an error wrapping ErrShutdownIncomplete that names it.
func (t *Tree) awaitOnly(ctx context.Context, c *child, d time.Duration, exited <-chan struct{}) error {
	err := c.awaitStop(ctx, d, exited)
	if !errors.Is(err, errOverran) {
		return err
	}
	t.setUnstopped([]string{c.name})
	return fmt.Errorf("%w: %s", ErrShutdownIncomplete, c.name)
}

// ServeInline serves a tree of one child on the calling goroutine, which
// runs the child's loop itself: such a tree costs no goroutine of its
// own. Unlike Serve, it returns only once the child has returned, however
// long that takes after ctx ended; a caller that stops many such trees
// bounds its wait for each with AwaitStop. It returns ctx.Err() once ctx
// ended, or an error when the child terminated the tree or the tree does
// not have exactly one child.
func (t *Tree) ServeInline(ctx context.Context) error {
	t.mu.Lock()
	switch {
	case t.running:
		t.mu.Unlock()
		return ErrRunning
	case len(t.children) != 1:
		t.mu.Unlock()
		return fmt.Errorf("supervisor: tree %s: ServeInline needs one child, it has %d", t.name, len(t.children))
	case t.children[0].stopping():
		t.mu.Unlock()
		return fmt.Errorf("%w: %s is still stopping", ErrRunning, t.children[0].name)
	}
	t.running, t.unstopped = true, nil
	c := t.children[0]
	t.mu.Unlock()
	defer t.clearRunning()
	c.reset()
	return t.serveChild(ctx, c)
}

// AwaitStop waits for done, which the caller closes once ServeInline has
// returned, until the child's shutdown timeout has passed since the time
// the ctx given to ServeInline ended, or until ctx ends. Callers stopping
// many trees at once give each the same since, so that their timeouts run
// side by side. It returns nil when the child stopped in time, ctx.Err()
// when ctx ended first, and an error wrapping ErrShutdownIncomplete when
// the timeout passed: Unstopped then names the child, and
// ChildStopTimeout is emitted.
func (t *Tree) AwaitStop(ctx context.Context, since time.Time, done <-chan struct{}) error {
	t.mu.Lock()
	if len(t.children) != 1 { // ServeInline returned at once
		t.mu.Unlock()
		select {
		case <-done:
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	c := t.children[0]
	t.mu.Unlock()
	return t.awaitOnly(ctx, c, time.Until(since.Add(c.policy.ShutdownTimeout)), done)
}

// stopChildren halts the children in reverse order of Add (all at once
// in a group), each within its shutdown timeout, and names those that did
// not stop in time.
func (t *Tree) stopChildren(children []*child) []string {
	if t.concurrent {
		return t.haltAll(children)
	}
	var unstopped []string
	for i := len(children) - 1; i >= 0; i-- {
		if c := children[i]; c.awaitStop(context.Background(), c.policy.ShutdownTimeout, c.halt()) != nil {
			unstopped = append(unstopped, c.name)
		}
	}
	slices.Reverse(unstopped)
	return unstopped
}

// haltAll halts every child at once and waits for each within its
// shutdown timeout; it names those that did not stop in time, in the
// order they were added.
func (t *Tree) haltAll(children []*child) []string {
	since := time.Now()
	exits := make([]<-chan struct{}, len(children))
	for i, c := range children {
		exits[i] = c.halt()
	}
	var unstopped []string
	for i, c := range children {
		if c.awaitStop(context.Background(), time.Until(since.Add(c.policy.ShutdownTimeout)), exits[i]) != nil {
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

// onSutureEvent reports what the root of a tree of several children
// sees: a child's loop that failed by itself, which only a bug in the
// loop would make it do (the loop recovers its service's panics, and
// emit those of hooks and loggers). The loops report their services'
// failures, pauses and stop timeouts themselves.
func (t *Tree) onSutureEvent(e suture.Event) {
	switch e := e.(type) {
	case suture.EventServiceTerminate:
		t.emit(ChildFailed{EventTime: t.stamp(), Child: e.ServiceName, Err: asError(e.Err), Failures: 1,
			Threshold: e.FailureThreshold, Restarting: e.Restarting})
	case suture.EventServicePanic:
		t.emit(ChildFailed{EventTime: t.stamp(), Child: e.ServiceName,
			Err:      &PanicError{Value: e.PanicMsg, Stack: []byte(e.Stacktrace)},
			Failures: max(int(math.Round(e.CurrentFailures)), 1), Threshold: e.FailureThreshold, Restarting: e.Restarting})
	}
}

// emit logs ev and passes it to the hook, as every component's events
// are. A hook or logger that panics is reported, not passed on: the
// child's loop that emits runs on no goroutine of suture's.
func (t *Tree) emit(ev Event) {
	defer func() {
		if v := recover(); v != nil {
			logfield.HookPanicked(t.log, ev.Kind(), v)
		}
	}()
	logfield.Write(t.log, zapcore.Level(ev.Level()), ev.Kind(), EventFields(ev))
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
