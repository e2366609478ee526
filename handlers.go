package corral

import (
	"context"
	"fmt"
	"reflect"
	"slices"
	"time"

	"github.com/corral-go/corral/consumer"
	"github.com/corral-go/corral/internal/conf"
	"github.com/corral-go/corral/supervisor"
)

// Handle binds h to the handler named name, as consumer.Group.Handle
// does. Its settings are cfg, declared in code (the zero Config when they
// all come from the file), overridden by Config.Handlers[name]: a key the
// file or the environment sets wins, false and zero included, so a file
// retunes workers, queues and policies without a code change. Handle fails
// with a clear error when the subject or any setting is invalid, the name
// is already bound, or the name is neither in the configuration nor given
// settings here.
//
// Declared before Run, the common path, the handler starts with the tree.
// Declared while Run runs, it starts at once, under the tree: it fails
// with ErrStopping once Run's ctx has ended, and with an error wrapping
// ErrInvalidConfig when its shutdown timeout is longer than the handlers
// were given when Run began (restart.shutdown_timeout of the handlers
// declared then, or of the Client). RemoveHandler removes a handler.
func (c *Client) Handle(name string, cfg consumer.Config, h consumer.Handler) error {
	return c.declare(name, cfg, func(hc consumer.Config) error { return c.consumers.Handle(name, hc, h) })
}

// HandleRequest binds a request/reply endpoint, as Handle does: h's reply,
// or its error as a service error, goes back to each caller. The endpoint
// answers NATS micro discovery as part of the service cfg.Service names
// (by default one of its own, named after the handler).
func (c *Client) HandleRequest(name string, cfg consumer.Config, h consumer.RequestHandler) error {
	return c.declare(name, cfg, func(hc consumer.Config) error { return c.consumers.HandleRequest(name, hc, h) })
}

func (c *Client) declare(name string, hc consumer.Config, add func(consumer.Config) error) error {
	file, inFile := c.cfg.Handlers[name]
	if !inFile && reflect.ValueOf(hc).IsZero() {
		return fmt.Errorf("%w: %q", ErrUnknownHandler, name)
	}
	if inFile {
		conf.Override(&hc, file, c.cfg.keys, "handlers."+name)
	}
	hc.Restart = hc.Restart.Inherit(c.cfg.Restart)
	if hc.IsJetStream() {
		hc.JetStreamAPI = hc.JetStreamAPI.Or(c.cfg.JetStreamAPI)
	}
	if err := c.withStream(name, &hc); err != nil {
		return err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.serving {
		if err := c.liveLocked(name, hc); err != nil {
			return err
		}
	}
	if err := add(hc); err != nil {
		return err
	}
	c.bound[name] = true
	return nil
}

// liveLocked checks a handler declared while Run runs; c.mu is held.
func (c *Client) liveLocked(name string, hc consumer.Config) error {
	g := c.groups[0]
	if c.stoppingLocked() {
		return fmt.Errorf("corral: handler %q: %w", name, ErrStopping)
	}
	if !g.added { // served beside the tree, as long as it takes
		return nil
	}
	// The tree waits for the handlers group that long, and its handlers
	// need a second more than their own timeout.
	if t := hc.Restart.Inherit(supervisor.Defaults()).ShutdownTimeout; t > g.budget-time.Second {
		return fmt.Errorf("corral: handler %q: %w: restart.shutdown_timeout %v: longer than the %v the handlers were given when Run began; declare it before Run",
			name, ErrInvalidConfig, t, g.budget-time.Second)
	}
	return nil
}

// stoppingLocked reports whether the current Run's ctx has ended; c.mu is
// held.
func (c *Client) stoppingLocked() bool {
	select {
	case <-c.groups[0].stopping:
		return c.serving
	default:
		return false
	}
}

// RemoveHandler removes the handler named name, as consumer.Group.Remove
// does. While Run runs, the handler drains as at shutdown: it takes no
// more messages, and those in flight finish within its shutdown timeout
// (a JetStream handler naks what it has not started; its durable
// consumer stays on the server). RemoveHandler waits for that or for ctx.
// Before or after Run, the handler is forgotten. It fails with an error
// wrapping consumer.ErrNotDeclared for a name no handler has, ErrStopping
// once Run's ctx has ended, and ErrShutdownIncomplete when the handler did
// not stop in time. A handler of Config.Handlers removed this way is not
// reported unbound by a later Run.
func (c *Client) RemoveHandler(ctx context.Context, name string) error {
	c.mu.Lock()
	stopping := c.stoppingLocked()
	c.mu.Unlock()
	if stopping {
		return fmt.Errorf("corral: handler %q: %w", name, ErrStopping)
	}
	return c.consumers.Remove(ctx, name)
}

// unbound lists handlers configured but never bound by code.
func (c *Client) unbound() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []string
	for name := range c.cfg.Handlers {
		if !c.bound[name] {
			out = append(out, name)
		}
	}
	slices.Sort(out)
	return out
}

// Consumers is the group that runs the handlers, for what the Client does
// not show itself, such as each handler's latency histogram at chosen
// bounds (consumer.Group.Histograms).
func (c *Client) Consumers() *consumer.Group { return c.consumers }
