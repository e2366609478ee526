package corral

import (
	"fmt"
	"reflect"
	"slices"

	"github.com/corral-go/corral/consumer"
	"github.com/corral-go/corral/internal/conf"
)

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
		return fmt.Errorf("%w: %q", ErrUnknownHandler, name)
	}
	if inFile {
		conf.Override(&hc, file, c.cfg.keys.Under("handlers."+name))
	}
	hc.Restart = hc.Restart.Inherit(c.cfg.Restart)
	if err := c.withStream(name, &hc); err != nil {
		return err
	}
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
