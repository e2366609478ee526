package kv

import (
	"context"
	"fmt"
	"strings"
	"sync"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/corral-go/corral/internal/streamwatch"
	"github.com/corral-go/corral/internal/subject"
	"github.com/corral-go/corral/supervisor"
)

// Synced is the Op of the entry a watch delivers once it has delivered
// the current values (or at once, without them): what follows are changes.
const Synced Op = "synced"

// WatchConfig selects what a watch sees.
type WatchConfig struct {
	// Keys are the keys watched; '*' and '>' wildcards allowed. Default
	// every key (">").
	Keys []string `yaml:"keys"`
	// UpdatesOnly skips the current values: only changes from the start of
	// the watch on are delivered.
	UpdatesOnly bool `yaml:"updates_only"`
	// IgnoreDeletes skips deletes, purges and expiries.
	IgnoreDeletes bool `yaml:"ignore_deletes"`
}

// WatchFunc receives each change of a watched key, once and in revision
// order. An error fails the watch, which is restarted per its policy and
// delivers that change again.
type WatchFunc[T any] func(ctx context.Context, e Entry[T]) error

// Watch is a supervised watch of a bucket: a suture.Service that delivers
// every change once and in order and, after an error, a server restart or
// a replaced connection, resumes after the last revision it delivered,
// with no duplicate and no gap among the revisions the bucket still holds
// (see the package doc on History). The current values are each key's
// last revision when the watch first reads them; started again before
// Synced, it delivers those it had yet to deliver and every revision
// written since that first read, one superseded before the restart
// included. Expiries (with LimitMarkerTTL) are delivered as Expired.
// Serve it once at a time; it may be served again after Serve returned.
type Watch[T any] struct {
	watch  *streamwatch.Watch
	synced chan struct{}
	once   sync.Once
}

// Serve delivers changes until ctx ends, following replaced connections,
// and returns ctx.Err() then. It returns an error when the bucket cannot
// be read or the WatchFunc fails; served again, it resumes after the last
// change delivered.
func (w *Watch[T]) Serve(ctx context.Context) error { return w.watch.Serve(ctx) }

// String returns the watch's name, for the supervisor's logs.
func (w *Watch[T]) String() string { return w.watch.String() }

// OnStarted makes the watch a supervisor.Starter: it calls started each
// time it reads the bucket again, which ends an episode of failures (the
// bucket's cluster could not answer after losing a node, say; such
// failures are marked supervisor.Unavailable).
func (w *Watch[T]) OnStarted(started func()) { w.watch.OnStarted(started) }

// Synced returns a channel closed once the watch has first delivered the
// current values and the Synced entry (at once with UpdatesOnly): from
// then on every change is delivered, a change made after it included.
func (w *Watch[T]) Synced() <-chan struct{} { return w.synced }

// Watch returns a watch of the bucket, named name, that calls fn. The
// bucket is declared (or bound) before it is watched. It fails with
// [supervisor.ErrInvalidConfig] when name is not a valid service name (no whitespace,
// '.', '*', '>', '/' or '\', at most 255 bytes), fn is nil or one of
// cfg.Keys is contained in another (the server refuses such a watch), and
// with [ErrInvalidKey] when a key is not a valid pattern or too long.
func (b *Bucket[T]) Watch(name string, cfg WatchConfig, fn WatchFunc[T]) (*Watch[T], error) {
	if err := subject.ValidName(name); err != nil {
		return nil, fmt.Errorf("kv: %w: watch %w", supervisor.ErrInvalidConfig, err)
	}
	if fn == nil {
		return nil, fmt.Errorf("kv: watch %s: %w: nil WatchFunc", name, supervisor.ErrInvalidConfig)
	}
	h := b.handle
	filters, err := watchFilters(h.name, cfg.Keys)
	if err != nil {
		return nil, fmt.Errorf("kv: watch %s: %w", name, err)
	}
	var declared jetstream.KeyValue // by Prepare; the watch calls Prepare and Missing in turn
	out := &Watch[T]{synced: make(chan struct{})}
	out.watch = streamwatch.New(streamwatch.Config{
		Name: name, Stream: streamName(h.name), API: h.cfg.JetStreamAPI, Filters: filters, UpdatesOnly: cfg.UpdatesOnly,
		Deliver: func(ctx context.Context, m jetstream.Msg) error {
			e, err := b.watchEntry(m)
			if err != nil {
				return err
			}
			if cfg.IgnoreDeletes && e.Op != Put {
				return nil
			}
			return fn(ctx, e)
		},
		InitialDone: func(ctx context.Context) error {
			if err := fn(ctx, Entry[T]{Op: Synced}); err != nil {
				return err
			}
			out.once.Do(func() { close(out.synced) })
			return nil
		},
		// The bucket may have been declared before and deleted since: the
		// watch then declares it again rather than fail until another call
		// does.
		Prepare: func(ctx context.Context) (err error) {
			declared, err = h.current(ctx)
			return err
		},
		Missing: func() { h.declared.Missing(declared) },
	}, h.src)
	return out, nil
}

// watchFilters are the subjects of keys (every key when there are none)
// in bucket.
func watchFilters(bucket string, keys []string) ([]string, error) {
	if len(keys) == 0 {
		keys = []string{">"}
	}
	prefix := keyPrefix(bucket)
	filters := make([]string, len(keys))
	for i, k := range keys {
		err := subject.CheckLen("key", k, KeyLimit(bucket))
		if err == nil {
			err = subject.Validate(k, true)
		}
		if err != nil {
			// Matches ErrInvalidKey without repeating its "kv: ": Watch
			// says that.
			return nil, fmt.Errorf("keys[%d]: %w", i, invalidKey{fmt.Errorf("invalid key: %w", err)})
		}
		filters[i] = prefix + k
	}
	if err := disjoint(keys); err != nil {
		return nil, err
	}
	return filters, nil
}

// watchEntry decodes the revision m.
func (b *Bucket[T]) watchEntry(m jetstream.Msg) (Entry[T], error) {
	meta, err := m.Metadata()
	if err != nil {
		return Entry[T]{}, err
	}
	e := Entry[T]{Key: strings.TrimPrefix(m.Subject(), keyPrefix(b.handle.name)), Revision: meta.Sequence.Stream,
		Created: meta.Timestamp, Op: watchOp(m)}
	if e.Op == Put {
		if e.Value, err = b.codec.Decode(m.Data()); err != nil {
			return e, fmt.Errorf("kv: decode %s revision %d: %w", e.Key, e.Revision, err)
		}
	}
	return e, nil
}

// watchOp reads what a revision did from its headers.
func watchOp(m jetstream.Msg) Op {
	h := m.Headers()
	switch h.Get("KV-Operation") {
	case "DEL":
		return Delete
	case "PURGE":
		return Purge
	}
	switch h.Get(jetstream.MarkerReasonHeader) {
	case "MaxAge":
		return Expired
	case "Purge":
		return Purge
	case "Remove":
		return Delete
	}
	return Put
}

// disjoint reports keys of which one contains another (every key the one
// matches, the other matches too, as with "app.a" and "app.*", or a key
// given twice). The server refuses a consumer with such filters, and the
// watch would fail at every restart.
func disjoint(keys []string) error {
	toks := make([][]string, len(keys))
	for i, k := range keys {
		toks[i] = strings.Split(k, ".")
	}
	for i := range keys {
		for j := i + 1; j < len(keys); j++ {
			if contains(toks[i], toks[j]) || contains(toks[j], toks[i]) {
				return fmt.Errorf("%w: keys[%d] %q and keys[%d] %q overlap: the server refuses a watch whose keys contain one another",
					supervisor.ErrInvalidConfig, i, keys[i], j, keys[j])
			}
		}
	}
	return nil
}

// contains reports whether pattern outer matches every key inner does.
func contains(outer, inner []string) bool {
	for i, o := range outer {
		if i >= len(inner) {
			return false
		}
		if o == ">" {
			return true
		}
		switch in := inner[i]; {
		case in == ">":
			return false
		case o == "*":
		case in == "*" || in != o:
			return false
		}
	}
	return len(outer) == len(inner)
}
