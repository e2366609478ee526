package corral

import (
	"fmt"
	"time"

	"github.com/thejerf/suture/v4"

	"github.com/corral-go/corral/kv"
	"github.com/corral-go/corral/objectstore"
	"github.com/corral-go/corral/supervisor"
)

// Bucket opens the bucket name of Config.KV with values encoded by codec
// (kv.JSON[T]{} for JSON). The bucket follows the Client's connection
// across replacements and is declared on first use. Keep the result:
// each call returns a new handle.
func Bucket[T any](c *Client, name string, codec kv.Codec[T]) (*kv.Bucket[T], error) {
	cfg, ok := c.cfg.KV[name]
	if !ok {
		return nil, fmt.Errorf("corral: bucket %q: %w", name, ErrUnknownBucket)
	}
	return kv.Open(name, cfg, c.conn, codec)
}

// KV opens the bucket name of Config.KV with raw byte values.
func (c *Client) KV(name string) (*kv.Bucket[[]byte], error) {
	return Bucket(c, name, kv.Raw{})
}

// ObjectStore opens the store name of Config.ObjectStores, declared on
// first use.
func (c *Client) ObjectStore(name string) (*objectstore.Store, error) {
	cfg, ok := c.cfg.ObjectStores[name]
	if !ok {
		return nil, fmt.Errorf("corral: object store %q: %w", name, ErrUnknownStore)
	}
	return objectstore.Open(name, cfg, c.conn)
}

// Lock returns a distributed lock on the Client's connection. Its bucket
// is declared by the lock (history 1, TTL the lock's), so do not also
// declare it in Config.KV.
func (c *Client) Lock(cfg kv.LockConfig) (*kv.Lock, error) {
	return kv.NewLock(cfg, c.conn)
}

// WatchKV declares a supervised watch named name of bucket b: fn sees
// every change of the keys in cfg once and in revision order, across
// errors, server restarts and replaced connections; see kv.Watch.
// Declare watches before Run.
func WatchKV[T any](c *Client, name string, b *kv.Bucket[T], cfg kv.WatchConfig, fn kv.WatchFunc[T]) error {
	w, err := b.Watch(name, cfg, fn)
	if err != nil {
		return err
	}
	return c.addWatch(name, w)
}

// WatchObjects declares a supervised watch named name of store s: fn sees
// every change once and in order, as WatchKV's does. With updatesOnly it
// starts with the changes after the watch first starts; otherwise it
// first delivers every object's current info. Declare watches before Run.
func (c *Client) WatchObjects(name string, s *objectstore.Store, updatesOnly bool, fn objectstore.WatchFunc) error {
	return c.addWatch(name, s.Watch(name, updatesOnly, fn))
}

func (c *Client) addWatch(name string, w suture.Service) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.serving {
		return fmt.Errorf("corral: watch %q: %w: declare watches before Run", name, ErrRunning)
	}
	if err := c.watchers.Add(name, w, c.watchPolicy()); err != nil {
		return fmt.Errorf("corral: watch %q: %w", name, err)
	}
	return nil
}

func (c *Client) watchPolicy() supervisor.Policy {
	return c.cfg.Watches.Restart.Inherit(c.cfg.Restart)
}

// watchersPolicy is the watchers group's: it never fails by itself and
// waits for the slowest watch to stop.
func (c *Client) watchersPolicy() supervisor.Policy {
	p := c.cfg.Restart.Inherit(supervisor.Defaults())
	p.Mode = supervisor.Permanent
	p.ShutdownTimeout = max(p.ShutdownTimeout, c.watchPolicy().Inherit(supervisor.Defaults()).ShutdownTimeout) + time.Second
	return p
}
