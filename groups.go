package corral

import (
	"fmt"
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
			continue
		}
		if err := c.tree.Add(name, g.svc, p); err != nil {
			c.serving = false
			return err
		}
		g.added = true
	}
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
