package kv

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/corral-go/corral/codec"
	"github.com/corral-go/corral/connection"
	"github.com/corral-go/corral/internal/jsapi"
	"github.com/corral-go/corral/supervisor"
)

// Op is what a revision did to its key.
type Op string

const (
	// Put is a revision that set a value.
	Put Op = "put"
	// Delete is a revision that removed the value (a delete marker).
	Delete Op = "delete"
	// Purge is a revision that removed the value and its history.
	Purge Op = "purge"
	// Expired is the marker of a value that reached its TTL (seen only
	// with LimitMarkerTTL).
	Expired Op = "expired"
)

// Entry is one revision of a key.
type Entry[T any] struct {
	Key      string
	Value    T // the zero value unless Op is Put
	Revision uint64
	Created  time.Time
	Op       Op
}

// Bucket is a typed key-value bucket. It follows the connection: after
// the connection is replaced, the next call uses the new one. Its methods
// are safe for concurrent use. [Typed] makes views of one bucket with
// other codecs, which share its declaration.
type Bucket[T any] struct {
	handle *handle
	codec  codec.Codec[T]
}

// Open returns the bucket name with values encoded by cd. The bucket
// is declared (or bound, with Bind) on first use. It fails with
// [supervisor.ErrInvalidConfig] when cfg or the name is invalid (a bucket's name is
// letters, digits, - and _, at most 251 bytes so that its stream's,
// "KV_<name>", fits in JetStream's 255).
func Open[T any](name string, cfg Config, src connection.Source, cd codec.Codec[T]) (*Bucket[T], error) {
	h, err := newHandle(name, cfg, src)
	if err != nil {
		return nil, err
	}
	return &Bucket[T]{handle: h, codec: cd}, nil
}

// Typed returns a view of b's bucket whose values are encoded by cd.
// The view shares b's declaration, the bucket declared on the current
// connection and its value-size limit: making one costs an allocation,
// and declares nothing.
func Typed[T, U any](b *Bucket[U], cd codec.Codec[T]) *Bucket[T] {
	return &Bucket[T]{handle: b.handle, codec: cd}
}

// Name returns the bucket's name.
func (b *Bucket[T]) Name() string { return b.handle.name }

// Raw returns the nats.go bucket on the current connection, for
// everything else it offers. It declares the bucket if need be.
func (b *Bucket[T]) Raw(ctx context.Context) (jetstream.KeyValue, error) {
	return b.handle.current(ctx)
}

func (b *Bucket[T]) encode(key string, v T) ([]byte, error) {
	if err := checkKey(b.handle.name, key); err != nil {
		return nil, err
	}
	data, err := b.codec.Encode(v)
	if err != nil {
		return nil, fmt.Errorf("kv: encode %s: %w", key, err)
	}
	if limit := b.handle.limit(); limit > 0 && int64(len(data)) > limit {
		return nil, fmt.Errorf("%w: %s: %d bytes, the bucket accepts %d", ErrValueTooLarge, key, len(data), limit)
	}
	return data, nil
}

func (b *Bucket[T]) entry(e jetstream.KeyValueEntry) (Entry[T], error) {
	out := Entry[T]{Key: e.Key(), Revision: e.Revision(), Created: e.Created(), Op: opOf(e.Operation())}
	if out.Op == Put {
		v, err := b.codec.Decode(e.Value())
		if err != nil {
			return out, fmt.Errorf("kv: decode %s revision %d: %w", out.Key, out.Revision, err)
		}
		out.Value = v
	}
	return out, nil
}

func opOf(op jetstream.KeyValueOp) Op {
	switch op {
	case jetstream.KeyValueDelete:
		return Delete
	case jetstream.KeyValuePurge:
		return Purge
	}
	return Put
}

// Get returns the key's current value, or fails with [ErrKeyNotFound].
func (b *Bucket[T]) Get(ctx context.Context, key string) (Entry[T], error) {
	if err := checkKey(b.handle.name, key); err != nil {
		return Entry[T]{}, err
	}
	kv, err := b.handle.current(ctx)
	if err != nil {
		return Entry[T]{}, err
	}
	e, err := kv.Get(ctx, key)
	if err != nil {
		return Entry[T]{}, b.handle.fail(kv, "get", key, err)
	}
	return b.entry(e)
}

// Put sets the key's value and returns its revision.
func (b *Bucket[T]) Put(ctx context.Context, key string, v T) (uint64, error) {
	data, err := b.encode(key, v)
	if err != nil {
		return 0, err
	}
	kv, err := b.handle.current(ctx)
	if err != nil {
		return 0, err
	}
	rev, err := kv.Put(ctx, key, data)
	if err != nil {
		return 0, b.handle.fail(kv, "put", key, err)
	}
	return rev, nil
}

// Create sets the key's value only if it has none (never set, deleted or
// expired), else fails with [ErrKeyExists].
func (b *Bucket[T]) Create(ctx context.Context, key string, v T) (uint64, error) {
	return b.create(ctx, key, v)
}

// CreateTTL is Create with a TTL for this key alone: the value expires
// after ttl. The bucket needs [Config].LimitMarkerTTL, else CreateTTL
// fails with [supervisor.ErrInvalidConfig] (unless the bucket is bound: the server
// then decides).
func (b *Bucket[T]) CreateTTL(ctx context.Context, key string, v T, ttl time.Duration) (uint64, error) {
	if cfg := b.handle.cfg; cfg.LimitMarkerTTL == 0 && !cfg.Bind {
		return 0, fmt.Errorf("kv: create %s with a TTL: %w: the bucket needs limit_marker_ttl", key, supervisor.ErrInvalidConfig)
	}
	return b.create(ctx, key, v, jetstream.KeyTTL(ttl))
}

func (b *Bucket[T]) create(ctx context.Context, key string, v T, opts ...jetstream.KVCreateOpt) (uint64, error) {
	data, err := b.encode(key, v)
	if err != nil {
		return 0, err
	}
	kv, err := b.handle.current(ctx)
	if err != nil {
		return 0, err
	}
	rev, err := kv.Create(ctx, key, data, opts...)
	if jsapi.WrongLastSequence(err) {
		// A replicated bucket reports a lost race as code 10164, which
		// jetstream.ErrKeyExists (10071) does not match on every path.
		return 0, fmt.Errorf("%w: create %s: %w", ErrKeyExists, key, asKeyExists(err))
	}
	if err != nil {
		return 0, b.handle.fail(kv, "create", key, err)
	}
	return rev, nil
}

// CompareAndSet sets the key's value only if its current revision is
// revision, else fails with [ErrRevisionMismatch].
func (b *Bucket[T]) CompareAndSet(ctx context.Context, key string, v T, revision uint64) (uint64, error) {
	data, err := b.encode(key, v)
	if err != nil {
		return 0, err
	}
	kv, err := b.handle.current(ctx)
	if err != nil {
		return 0, err
	}
	rev, err := kv.Update(ctx, key, data, revision)
	if jsapi.WrongLastSequence(err) {
		return 0, fmt.Errorf("%w: %s at revision %d: %w", ErrRevisionMismatch, key, revision, asKeyExists(err))
	}
	if err != nil {
		return 0, b.handle.fail(kv, "compare and set", key, err)
	}
	return rev, nil
}

// updateAttempts bounds Update's tries. A writer that loses a race tries
// again while the others carry on, so under steady contention each try
// wins with a fair chance, not a certainty: the bound is set so that ten
// writers hammering one key on a loaded machine still all get through,
// and ctx stays the real limit on how long Update may take.
const updateAttempts = 50

// Update reads the key, calls fn with its value (exists is false when it
// has none), and writes the result if the key has not changed meanwhile.
// On a conflict it tries again after a random wait that grows from about
// 1ms to about 100ms, up to 50 times in all (about 5s), then fails with
// [ErrTooManyConflicts]; it returns ctx.Err() when ctx ends first. An error
// from fn is returned as is. fn may be called several times and must not
// have side effects.
func (b *Bucket[T]) Update(ctx context.Context, key string, fn func(old T, exists bool) (T, error)) (Entry[T], error) {
	wait := time.Millisecond
	for range updateAttempts {
		cur, err := b.Get(ctx, key)
		exists := err == nil
		if err != nil && !errors.Is(err, ErrKeyNotFound) {
			return Entry[T]{}, err
		}
		next, err := fn(cur.Value, exists)
		if err != nil {
			return Entry[T]{}, err
		}
		var rev uint64
		if exists {
			rev, err = b.CompareAndSet(ctx, key, next, cur.Revision)
		} else {
			rev, err = b.Create(ctx, key, next)
		}
		switch {
		case err == nil:
			return Entry[T]{Key: key, Value: next, Revision: rev, Op: Put, Created: time.Now()}, nil
		case !errors.Is(err, ErrRevisionMismatch) && !errors.Is(err, ErrKeyExists):
			return Entry[T]{}, err
		}
		// Jittered, so that the writers that lost together do not all
		// come back together.
		t := time.NewTimer(wait/2 + rand.N(wait))
		select {
		case <-ctx.Done():
			t.Stop()
			return Entry[T]{}, ctx.Err()
		case <-t.C:
		}
		wait = min(2*wait, 100*time.Millisecond)
	}
	return Entry[T]{}, fmt.Errorf("%w: %s", ErrTooManyConflicts, key)
}

// Delete removes the key's value, leaving a delete marker in its history.
func (b *Bucket[T]) Delete(ctx context.Context, key string) error {
	if err := checkKey(b.handle.name, key); err != nil {
		return err
	}
	kv, err := b.handle.current(ctx)
	if err != nil {
		return err
	}
	if err := kv.Delete(ctx, key); err != nil {
		return b.handle.fail(kv, "delete", key, err)
	}
	return nil
}

// Purge removes the key's value and its history.
func (b *Bucket[T]) Purge(ctx context.Context, key string) error {
	if err := checkKey(b.handle.name, key); err != nil {
		return err
	}
	kv, err := b.handle.current(ctx)
	if err != nil {
		return err
	}
	if err := kv.Purge(ctx, key); err != nil {
		return b.handle.fail(kv, "purge", key, err)
	}
	return nil
}

// Keys returns the keys that have a value, nil when none has.
func (b *Bucket[T]) Keys(ctx context.Context) ([]string, error) {
	kv, err := b.handle.current(ctx)
	if err != nil {
		return nil, err
	}
	keys, err := kv.Keys(ctx)
	if errors.Is(err, jetstream.ErrNoKeysFound) {
		return nil, nil
	}
	if err != nil {
		return nil, b.handle.fail(kv, "keys", "", err)
	}
	return keys, nil
}

// History returns the key's revisions that the bucket keeps, oldest first.
func (b *Bucket[T]) History(ctx context.Context, key string) ([]Entry[T], error) {
	if err := checkKey(b.handle.name, key); err != nil {
		return nil, err
	}
	kv, err := b.handle.current(ctx)
	if err != nil {
		return nil, err
	}
	hist, err := kv.History(ctx, key)
	if err != nil {
		return nil, b.handle.fail(kv, "history", key, err)
	}
	out := make([]Entry[T], 0, len(hist))
	for _, e := range hist {
		en, err := b.entry(e)
		if err != nil {
			return nil, err
		}
		out = append(out, en)
	}
	return out, nil
}
