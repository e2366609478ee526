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
// bucket on first use. For typed values, take a view with kv.Typed:
//
//	raw, err := client.KV("settings")
//	settings := kv.Typed(raw, codec.JSON[Settings]{})
func (c *Client) KV(name string) (*kv.Bucket[[]byte], error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if b, ok := c.handles.buckets[name]; ok {
		return b, nil
	}
	cfg, ok := c.cfg.KV[name]
	if !ok {
		return nil, fmt.Errorf("%w: %q", ErrUnknownBucket, name)
	}
	cfg.Events = c.events
	b, err := kv.Open(name, cfg, c.conn, codec.Bytes{})
	if err != nil {
		return nil, err
	}
	c.handles.buckets[name] = b
	return b, nil
}

// ObjectStore returns the store name of Config.ObjectStores, made at the
// first call and shared by every later one; it is declared on first use.
func (c *Client) ObjectStore(name string) (*objectstore.Store, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if s, ok := c.handles.stores[name]; ok {
		return s, nil
	}
	cfg, ok := c.cfg.ObjectStores[name]
	if !ok {
		return nil, fmt.Errorf("%w: %q", ErrUnknownStore, name)
	}
	cfg.Events = c.events
	s, err := objectstore.Open(name, cfg, c.conn)
	if err != nil {
		return nil, err
	}
	c.handles.stores[name] = s
	return s, nil
}

// Lock returns the lock name of Config.Locks, made at the first call and
// shared by every later one. Its bucket is declared by the lock (history
// 1, TTL the lock's); New refuses one that is also in Config.KV.
func (c *Client) Lock(name string) (*kv.Lock, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if l, ok := c.handles.locks[name]; ok {
		return l, nil
	}
	if _, ok := c.cfg.Locks[name]; !ok {
		return nil, fmt.Errorf("%w: %q", ErrUnknownLock, name)
	}
	cfg := c.cfg.lock(name)
	cfg.Events = c.events
	l, err := kv.NewLock(cfg, c.conn)
	if err != nil {
		return nil, err
	}
	c.handles.locks[name] = l
	return l, nil
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
