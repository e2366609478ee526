package consumer

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/corral-go/corral/supervisor"
)

var (
	// ErrStopping is returned by Handle, HandleRequest and Remove while the
	// group's Serve is stopping its handlers. Like ErrDuplicateHandler, it
	// is only returned wrapped under `consumer: handler "name":`.
	ErrStopping = errors.New("the handlers are stopping")
	// ErrNotDeclared is returned by Remove for a name that no handler has,
	// or whose handler is being removed already.
	ErrNotDeclared = errors.New("not declared")
)

// member is a declared handler (or the group's micro responder) and its
// tree: each runs under a tree of its own, so that it starts and stops
// alone while the group serves, on one goroutine (ServeInline) that
// supervises the handler and runs its service.
type member struct {
	svc  service // nil for the micro responder
	tree *supervisor.Tree
	// Set while the member runs, under Group.mu.
	cancel  context.CancelFunc
	done    chan struct{} // closed once its tree's ServeInline has returned
	removed bool
}

// groupRun is one Serve of a group.
type groupRun struct {
	members  []*member // every member started, to wait for
	stopping bool
	failed   chan error // a member whose tree ended by itself
}

// startLocked runs m's tree until it is cancelled; g.mu is held and the
// group serves.
func (g *Group) startLocked(m *member) {
	r := g.run
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	m.cancel, m.done = cancel, done
	r.members = append(r.members, m)
	go func() {
		err := m.tree.ServeInline(ctx)
		early := ctx.Err() == nil
		cancel()
		g.mu.Lock()
		if m.done == done { // not started again while this one overran its stop
			m.cancel = nil
		}
		if m.removed {
			g.forgetLocked(m)
			// Nothing left to wait for: handlers added and removed for a
			// long run must not pile up.
			r.members = slices.DeleteFunc(r.members, func(x *member) bool { return x == m })
		}
		close(done)
		g.mu.Unlock()
		if early { // the tree terminated, or would not start
			select {
			case r.failed <- fmt.Errorf("%s: %w", m.tree, err):
			default:
			}
		}
	}()
}

// startMicroLocked starts the micro responder once the group has a
// service (a request handler) and serves: a group of other handlers runs
// without it, two goroutines fewer. Once started it runs until Serve
// ends. g.mu is held.
func (g *Group) startMicroLocked() {
	if g.micro.cancel == nil && len(g.services.byName) > 0 {
		g.startLocked(g.micro)
	}
}

// serve starts every member, waits for ctx to end (or a member's tree to
// end by itself), then stops them all at once and waits for each, within
// its shutdown timeout.
func (g *Group) serve(ctx context.Context) error {
	g.mu.Lock()
	if g.run != nil {
		g.mu.Unlock()
		return fmt.Errorf("consumer: %w", supervisor.ErrRunning)
	}
	r := &groupRun{failed: make(chan error, 1)}
	g.run, g.unstopped = r, nil
	g.startMicroLocked()
	for _, m := range g.handlers {
		g.startLocked(m)
	}
	g.mu.Unlock()

	var failed error
	select {
	case <-ctx.Done():
	case failed = <-r.failed:
	}
	g.mu.Lock()
	r.stopping = true
	for _, m := range r.members {
		if m.cancel != nil {
			m.cancel()
		}
	}
	members := slices.Clone(r.members) // a removed member leaves r.members in place
	g.mu.Unlock()
	// Every member stopped at once: their timeouts run side by side.
	since := time.Now()
	var unstopped []string
	for _, m := range members {
		if m.tree.AwaitStop(context.Background(), since, m.done) != nil {
			unstopped = append(unstopped, m.tree.Unstopped()...)
		}
	}
	g.mu.Lock()
	g.run, g.unstopped = nil, unstopped
	g.mu.Unlock()
	switch {
	case failed != nil:
		return fmt.Errorf("consumer: %w", failed)
	case len(unstopped) > 0:
		return fmt.Errorf("%w: %s: %w", supervisor.ErrShutdownIncomplete, strings.Join(unstopped, ", "), ctx.Err())
	}
	return ctx.Err()
}

// Remove removes the handler named name. While the group serves, the
// handler drains as at shutdown: it stops taking messages and lets those
// in flight finish within its shutdown timeout; a JetStream handler naks
// what it has not started, and its durable consumer stays on the server.
// Remove waits for that, or for ctx to end (the drain goes on; the name
// is free once it is done). Before Serve, or after it, the handler is
// simply forgotten. Remove fails with [ErrNotDeclared] for a name no
// handler has, [ErrStopping] while Serve stops, and an error wrapping
// [supervisor.ErrShutdownIncomplete] when the handler did not stop in
// time.
func (g *Group) Remove(ctx context.Context, name string) error {
	g.mu.Lock()
	m, ok := g.byName[name]
	switch {
	case !ok || m.removed:
		g.mu.Unlock()
		return fmt.Errorf("consumer: handler %q: %w", name, ErrNotDeclared)
	case g.run != nil && g.run.stopping:
		g.mu.Unlock()
		return fmt.Errorf("consumer: handler %q: %w", name, ErrStopping)
	case m.cancel == nil: // not running
		g.forgetLocked(m)
		g.mu.Unlock()
		return nil
	}
	m.removed = true
	m.cancel()
	since, done := time.Now(), m.done
	g.mu.Unlock()
	switch err := m.tree.AwaitStop(ctx, since, done); {
	case errors.Is(err, supervisor.ErrShutdownIncomplete):
		return fmt.Errorf("consumer: handler %q: %w", name, supervisor.ErrShutdownIncomplete)
	case err != nil:
		return fmt.Errorf("consumer: handler %q: waiting for it to drain: %w", name, err)
	}
	return nil
}

// forgetLocked drops m's declaration; g.mu is held.
func (g *Group) forgetLocked(m *member) {
	b := m.svc.base()
	if g.byName[b.name] == m {
		delete(g.byName, b.name)
	}
	g.handlers = slices.DeleteFunc(g.handlers, func(x *member) bool { return x == m })
	g.services.detachLocked(b)
}
