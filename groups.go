package corral

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/thejerf/suture/v4"

	"github.com/corral-go/corral/supervisor"
)

// group is a child of the Client's tree that holds what code declares:
// the handlers, the task workers, the watches. It joins the tree at Run,
// once something is declared in it, after everything its children depend
// on, so that it stops before them.
type group struct {
	svc      suture.Service
	children func() []supervisor.ChildStatus
	added    bool
	// budget is the shutdown timeout the tree gives the group, set when
	// it joins or rejoins: what a handler added while it runs may take.
	budget time.Duration
	// stopping is closed when the current Run's ctx ends (consumers only).
	stopping <-chan struct{}
}

// policy is a group's: it never fails by itself (its children have their
// own policies) and waits for its slowest child to stop.
func (c *Client) groupPolicy(g *group) supervisor.Policy {
	p := c.cfg.Restart.Inherit(supervisor.Defaults())
	p.Mode = supervisor.Permanent
	for _, ch := range g.children() {
		p.ShutdownTimeout = max(p.ShutdownTimeout, ch.Policy.ShutdownTimeout)
	}
	p.ShutdownTimeout += time.Second
	return p
}

// addDeclared puts every group with children in the tree, or updates its
// policy when it is there from an earlier Serve, and marks the Client
// serving: from then on nothing more is declared, so what the groups hold
// is what runs.
func (c *Client) addDeclared() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.serving {
		return fmt.Errorf("corral: %w", ErrRunning)
	}
	c.serving = true
	// Not the last Run's ctx, ended: until serveTree sets this Run's, a
	// Handle is not refused as stopping.
	c.groups[0].stopping = nil
	for _, g := range c.groups {
		if len(g.children()) == 0 {
			continue
		}
		name, p := fmt.Sprint(g.svc), c.groupPolicy(g)
		if g.added {
			if err := c.tree.SetPolicy(name, p); err != nil {
				c.serving = false
				return err
			}
			g.budget = p.ShutdownTimeout
			continue
		}
		if err := c.tree.Add(name, g.svc, p); err != nil {
			c.serving = false
			return err
		}
		g.added, g.budget = true, p.ShutdownTimeout
	}
	c.nextPhaseLocked(false)
	return nil
}

// pendingShutdown is the shutdown time of the groups not in the tree yet.
func (c *Client) pendingShutdown() time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	var total time.Duration
	for _, g := range c.groups {
		if !g.added && len(g.children()) > 0 {
			total += c.groupPolicy(g).ShutdownTimeout + time.Second
		}
	}
	return total
}

// serveTree serves the tree until ctx ends. When no handler was declared
// before Run, the consumers group is not in the tree (which cannot take a
// child while it serves): serveTree then serves the group beside the
// tree, for the handlers added while it runs, and stops it before the
// tree, so that they drain before the publisher flushes, as in the tree.
func (c *Client) serveTree(ctx context.Context) error {
	c.mu.Lock()
	g := c.groups[0]
	g.stopping = ctx.Done()
	late := !g.added
	c.mu.Unlock()
	if !late {
		return c.tree.Serve(ctx)
	}
	treeCtx, stopTree := context.WithCancel(context.WithoutCancel(ctx))
	defer stopTree()
	groupCtx, stopGroup := context.WithCancel(ctx)
	defer stopGroup()
	treeDone, groupDone := make(chan error, 1), make(chan error, 1)
	go func() { groupDone <- c.consumers.Serve(groupCtx) }()
	go func() { treeDone <- c.tree.Serve(treeCtx) }()
	var treeErr, groupErr error
	treeEnded, groupEnded := false, false
	select {
	case <-ctx.Done():
	case treeErr = <-treeDone: // it terminated
		treeEnded = true
	case groupErr = <-groupDone:
		groupEnded = true
	}
	stopGroup()
	if !groupEnded {
		groupErr = <-groupDone
	}
	stopTree()
	if !treeEnded {
		treeErr = <-treeDone
	}
	switch {
	case ctx.Err() == nil && treeEnded:
		return treeErr
	case ctx.Err() == nil:
		return fmt.Errorf("corral: %w", groupErr)
	case errors.Is(treeErr, ErrShutdownIncomplete), errors.Is(groupErr, ErrShutdownIncomplete):
		names := append(c.consumers.Unstopped(), c.tree.Unstopped()...)
		return fmt.Errorf("%w: %s: %w", ErrShutdownIncomplete, strings.Join(names, ", "), ctx.Err())
	}
	return ctx.Err()
}

// incomplete is err, the tree's, or ErrShutdownIncomplete when a group
// stopped in time but left a child of its own running: the tree counts
// the group stopped, and takes its error, which wraps ctx's, for a clean
// stop.
func (c *Client) incomplete(ctx context.Context, err error) error {
	if ctx.Err() == nil || !errors.Is(err, ctx.Err()) || errors.Is(err, ErrShutdownIncomplete) {
		return err
	}
	names := slices.Concat(c.consumers.Unstopped(), c.tasks.Unstopped(), c.watchers.Unstopped())
	if len(names) == 0 {
		return err
	}
	return fmt.Errorf("%w: %s: %w", ErrShutdownIncomplete, strings.Join(names, ", "), ctx.Err())
}
