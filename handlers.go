package corral

import (
	"fmt"
	"reflect"
	"slices"
	"time"

	"github.com/corral-go/corral/consumer"
	"github.com/corral-go/corral/internal/conf"
	"github.com/corral-go/corral/supervisor"
	"github.com/thejerf/suture/v4"
)

// consumersPolicy is the policy of the consumer supervisor: it never fails
// by itself (its handlers have their own policies) and must be given the
// longest handler shutdown timeout to drain them all.
func (c *Client) consumersPolicy(longest time.Duration) supervisor.Policy {
	p := c.cfg.Restart.Inherit(supervisor.Defaults())
	p.Mode = supervisor.Permanent
	p.ShutdownTimeout = max(p.ShutdownTimeout, longest) + time.Second
	return p
}

// Handle binds h to the handler named name, as consumer.Group.Handle
// does. Its settings are cfg, declared in code (the zero Config when they
// all come from the file), overridden by Config.Handlers[name]: a key the
// file or the environment sets wins, false and zero included, so a file
// retunes workers, queues and policies without a code change. Handle fails
// with a clear error when the subject or any setting is invalid, the name
// is already bound, or the name is neither in the configuration nor given
// settings here. Declare handlers before Run.
func (c *Client) Handle(name string, cfg consumer.Config, h consumer.Handler) error {
	return c.declare(name, cfg, func(hc consumer.Config) error { return c.consumers.Handle(name, hc, h) })
}

// HandleRequest binds a request/reply endpoint, as Handle does: h's reply,
// or its error as a service error, goes back to each caller.
func (c *Client) HandleRequest(name string, cfg consumer.Config, h consumer.RequestHandler) error {
	return c.declare(name, cfg, func(hc consumer.Config) error { return c.consumers.HandleRequest(name, hc, h) })
}

func (c *Client) declare(name string, hc consumer.Config, add func(consumer.Config) error) error {
	file, inFile := c.cfg.Handlers[name]
	if !inFile && reflect.ValueOf(hc).IsZero() {
		return fmt.Errorf("handler %q: %w", name, ErrUnknownHandler)
	}
	if inFile {
		conf.Override(&hc, file, c.cfg.keys.Under("handlers."+name))
	}
	hc.Restart = hc.Restart.Inherit(c.cfg.Restart)
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.serving {
		return fmt.Errorf("corral: handler %q: %w: declare handlers before Run", name, ErrRunning)
	}
	if err := add(hc); err != nil {
		return err
	}
	c.bound[name] = true
	return nil
}

// addDeclared puts the consumer supervisor and the watchers in the tree,
// after everything they depend on, once handlers and watches are
// declared; each one's shutdown timeout covers the longest of its
// children's.
func (c *Client) addDeclared() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if handlers := c.consumers.Status(); len(handlers) > 0 {
		p := c.consumersPolicy(longestShutdown(handlers))
		if err := c.addOnce(&c.consumersAdded, c.consumers, p); err != nil {
			return err
		}
	}
	if len(c.watchers.Status()) > 0 {
		return c.addOnce(&c.watchersAdded, c.watchers, c.watchersPolicy())
	}
	return nil
}

func (c *Client) addOnce(added *bool, svc suture.Service, p supervisor.Policy) error {
	name := fmt.Sprint(svc)
	if *added {
		return c.tree.SetPolicy(name, p)
	}
	if err := c.tree.Add(name, svc, p); err != nil {
		return err
	}
	*added = true
	return nil
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

func longestShutdown(handlers []consumer.Status) time.Duration {
	var longest time.Duration
	for _, st := range handlers {
		longest = max(longest, st.Child.Policy.ShutdownTimeout)
	}
	return longest
}
