package corral

import (
	"fmt"
	"slices"
	"strings"

	"github.com/thejerf/suture/v4"

	"github.com/corral-go/corral/codec"
	"github.com/corral-go/corral/kv"
	"github.com/corral-go/corral/objectstore"
	"github.com/corral-go/corral/supervisor"
)

// handles holds the bucket, store and lock handles a Client made, one per
// name, so that every caller shares one declaration and one cache.
type handles struct {
	buckets map[string]*kv.Bucket[[]byte]
	stores  map[string]*objectstore.Store
	locks   map[string]*kv.Lock
}

// KV returns the bucket name of Config.KV, with raw byte values. The
// handle is made at the first call and shared by every later one; it
// follows the Client's connection across replacements and declares the
// bucket on first use; once Run has returned its calls fail at once with
// ErrNotRunning, as every call that needs the connection does. For typed
// values, take a view with kv.Typed:
//
//	raw, err := client.KV("settings")
//	settings := kv.Typed(raw, codec.JSON[Settings]{})
func (c *Client) KV(name string) (*kv.Bucket[[]byte], error) {
	return shared(c, c.handles.buckets, c.cfg.KV, name, ErrUnknownBucket, func(cfg kv.Config) (*kv.Bucket[[]byte], error) {
		cfg.Events = c.events
		cfg.JetStreamAPI = cfg.JetStreamAPI.Or(c.cfg.JetStreamAPI)
		return kv.Open(name, cfg, clientSource{c}, codec.Bytes{})
	})
}

// ObjectStore returns the store name of Config.ObjectStores, made at the
// first call and shared by every later one; it is declared on first use.
// Its calls wait for the connection as KV's do (see ErrNotRunning).
func (c *Client) ObjectStore(name string) (*objectstore.Store, error) {
	return shared(c, c.handles.stores, c.cfg.ObjectStores, name, ErrUnknownStore, func(cfg objectstore.Config) (*objectstore.Store, error) {
		cfg.Events = c.events
		cfg.JetStreamAPI = cfg.JetStreamAPI.Or(c.cfg.JetStreamAPI)
		return objectstore.Open(name, cfg, clientSource{c})
	})
}

// Lock returns the lock name of Config.Locks, made at the first call and
// shared by every later one. Its bucket is declared by the lock (history
// 1, TTL the lock's); New refuses one that is also in Config.KV. Its
// calls wait for the connection as KV's do (see ErrNotRunning).
func (c *Client) Lock(name string) (*kv.Lock, error) {
	return shared(c, c.handles.locks, c.cfg.Locks, name, ErrUnknownLock, func(kv.LockConfig) (*kv.Lock, error) {
		cfg := c.cfg.lock(name)
		cfg.Events = c.events
		cfg.JetStreamAPI = cfg.JetStreamAPI.Or(c.cfg.JetStreamAPI)
		return kv.NewLock(cfg, clientSource{c})
	})
}

// shared returns the handle of name in made, or opens it from its
// configuration in declared and keeps it there; a name declared nowhere
// is unknown. One handle per name: every caller shares its declaration
// and cache.
func shared[H any, C any](c *Client, made map[string]H, declared map[string]C, name string, unknown error,
	open func(C) (H, error)) (H, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if h, ok := made[name]; ok {
		return h, nil
	}
	cfg, ok := declared[name]
	if !ok {
		var none H
		return none, fmt.Errorf("%w: %q", unknown, name)
	}
	h, err := open(cfg)
	if err != nil {
		var none H
		return none, err
	}
	made[name] = h
	return h, nil
}

// AddWatch adds w, a watch made by kv.Bucket.Watch or
// objectstore.Store.Watch (or any suture.Service), to the Client's tree,
// under the watchers group and named by its String. It runs with the watches' restart policy:
// after an error, a server restart or a replaced connection it resumes
// where it left off. Declare watches before Run. Ready waits for a watch
// with a Synced method (kv's and objectstore's) until its channel closes.
func (c *Client) AddWatch(w suture.Service) error {
	name := fmt.Sprint(w)
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.serving {
		return fmt.Errorf("corral: watch %q: %w: declare watches before Run", name, ErrRunning)
	}
	if c.treeChildLocked(name) {
		return fmt.Errorf("corral: watch %q: %w: a child of the Client's tree has that name, and the status page and metrics tell children apart by name",
			name, supervisor.ErrDuplicateChild)
	}
	if err := c.watchers.Add(name, w, c.watchPolicy()); err != nil {
		return fmt.Errorf("corral: watch: %w", err) // names it
	}
	if s, ok := w.(interface{ Synced() <-chan struct{} }); ok {
		c.synced[name] = s.Synced() // for Ready
	}
	return nil
}

// treeChildLocked reports whether name is, or could be, a child of the
// tree other than a watch: its own children, its groups, a handler or a
// task worker. c.mu is held.
func (c *Client) treeChildLocked(name string) bool {
	if strings.HasPrefix(name, "handler/") || strings.HasPrefix(name, "tasks/") {
		return true
	}
	for _, g := range c.groups {
		if fmt.Sprint(g.svc) == name {
			return true
		}
	}
	return slices.ContainsFunc(c.tree.Status(), func(ch supervisor.ChildStatus) bool { return ch.Name == name })
}

func (c *Client) watchPolicy() supervisor.Policy {
	return c.cfg.Watches.Restart.Inherit(c.cfg.Restart)
}
