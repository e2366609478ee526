package objectstore

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/corral-go/corral/internal/streamwatch"
	"github.com/corral-go/corral/internal/subject"
	"github.com/corral-go/corral/supervisor"
)

// Change is one change of a watched store: an object put, or deleted
// (Info.Deleted), or Synced once the current objects have been delivered.
type Change struct {
	Info   *jetstream.ObjectInfo
	Synced bool
}

// WatchConfig selects what a watch sees.
type WatchConfig struct {
	// UpdatesOnly skips the current objects: only changes from the start
	// of the watch on are delivered.
	UpdatesOnly bool `yaml:"updates_only"`
	// IgnoreDeletes skips deleted objects.
	IgnoreDeletes bool `yaml:"ignore_deletes"`
}

// WatchFunc receives each change of a store, once and in order. An error
// fails the watch, which is restarted per its policy and delivers that
// change again.
type WatchFunc func(ctx context.Context, c Change) error

// Watch is a supervised watch of a store: a suture.Service that delivers
// the current objects (unless UpdatesOnly), then every change, once and
// in order, and after an error, a server restart or a replaced connection
// resumes after the last change it delivered, with no gap among the
// changes the store still holds and no duplicate. Serve it once at a
// time; it may be served again after Serve returned.
type Watch struct {
	watch  *streamwatch.Watch
	synced chan struct{}
	once   sync.Once
}

// Serve delivers changes until ctx ends, following replaced connections,
// and returns ctx.Err() then. It returns an error when the store cannot be
// read or the WatchFunc fails; served again, it resumes after the last
// change delivered.
func (w *Watch) Serve(ctx context.Context) error { return w.watch.Serve(ctx) }

// String returns the watch's name, for the supervisor's logs.
func (w *Watch) String() string { return w.watch.String() }

// OnStarted makes the watch a supervisor.Starter: it calls started each
// time it reads the store again, which ends an episode of failures (the
// store's cluster could not answer after losing a node, say; such
// failures are marked supervisor.Unavailable).
func (w *Watch) OnStarted(started func()) { w.watch.OnStarted(started) }

// Synced returns a channel closed once the watch has first delivered the
// current objects and the Synced change (at once with UpdatesOnly): from
// then on every change is delivered, a change made after it included.
func (w *Watch) Synced() <-chan struct{} { return w.synced }

// Watch returns a watch of the store, named name, that calls fn. The store
// is declared (or bound) before it is watched. It fails with
// [supervisor.ErrInvalidConfig] when fn is nil or name is not a valid service name
// (no whitespace, '.', '*', '>', '/' or '\', at most 255 bytes).
func (s *Store) Watch(name string, cfg WatchConfig, fn WatchFunc) (*Watch, error) {
	if err := subject.ValidName(name); err != nil {
		return nil, fmt.Errorf("objectstore: %w: watch %w", supervisor.ErrInvalidConfig, err)
	}
	if fn == nil {
		return nil, fmt.Errorf("objectstore: watch %s: %w: nil WatchFunc", name, supervisor.ErrInvalidConfig)
	}
	store := s.name
	var declared jetstream.ObjectStore // by Prepare; the watch calls Prepare and Missing in turn
	out := &Watch{synced: make(chan struct{})}
	out.watch = streamwatch.New(streamwatch.Config{
		Name: name, Stream: streamName(store), API: s.cfg.JetStreamAPI, Filters: []string{allMetaSubjects(store)}, UpdatesOnly: cfg.UpdatesOnly,
		Deliver: func(ctx context.Context, m jetstream.Msg) error {
			var info jetstream.ObjectInfo
			if err := json.Unmarshal(m.Data(), &info); err != nil {
				return fmt.Errorf("objectstore: watch %s: %w", store, err)
			}
			if cfg.IgnoreDeletes && info.Deleted {
				return nil
			}
			if meta, err := m.Metadata(); err == nil {
				info.ModTime = meta.Timestamp
			}
			return fn(ctx, Change{Info: &info})
		},
		InitialDone: func(ctx context.Context) error {
			if err := fn(ctx, Change{Synced: true}); err != nil {
				return err
			}
			out.once.Do(func() { close(out.synced) })
			return nil
		},
		// The store may have been declared before and deleted since: the
		// watch then declares it again rather than fail until another call
		// does.
		Prepare: func(ctx context.Context) (err error) {
			declared, err = s.current(ctx)
			return err
		},
		Missing: func() { s.declared.Missing(declared) },
	}, s.src)
	return out, nil
}
