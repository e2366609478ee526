package kv

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/corral-go/corral/connection"
	"github.com/corral-go/corral/internal/jsapi"
	"github.com/corral-go/corral/internal/redeclare"
	"github.com/corral-go/corral/internal/subject"
)

// Op is what a revision did to its key.
type Op string

const (
	// Put set a value.
	Put Op = "put"
	// Delete removed the value (a delete marker).
	Delete Op = "delete"
	// Purge removed the value and its history.
	Purge Op = "purge"
	// Expired: the value reached its TTL (seen only with LimitMarkerTTL).
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
// are safe for concurrent use.
type Bucket[T any] struct {
	name  string
	cfg   Config
	src   connection.Source
	codec Codec[T]

	declared redeclare.Declared[jetstream.KeyValue]
	mu       sync.Mutex
	max      int64 // largest value accepted, once known
}

// Open returns the bucket name with values encoded by codec. The bucket
// is declared (or bound, with Bind) on first use.
func Open[T any](name string, cfg Config, src connection.Source, codec Codec[T]) (*Bucket[T], error) {
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("kv: bucket %s: %w", name, err)
	}
	if err := ValidBucketName(name); err != nil {
		return nil, err
	}
	return &Bucket[T]{name: name, cfg: cfg, src: src, codec: codec}, nil
}

// Name is the bucket's name.
func (b *Bucket[T]) Name() string { return b.name }

// Raw is the nats.go bucket on the current connection, for everything
// else it offers.
func (b *Bucket[T]) Raw(ctx context.Context) (jetstream.KeyValue, error) { return b.bucket(ctx) }

// bucket is the nats.go bucket on the current connection.
func (b *Bucket[T]) bucket(ctx context.Context) (jetstream.KeyValue, error) {
	nc, _, err := b.src.Conn(ctx)
	if err != nil {
		return nil, err
	}
	return b.declared.Get(ctx, nc, func(ctx context.Context) (jetstream.KeyValue, error) {
		js, err := jetstream.New(nc)
		if err != nil {
			return nil, err
		}
		kv, err := b.cfg.open(ctx, js, b.name)
		if err != nil {
			return nil, err
		}
		limit := nc.MaxPayload()
		if b.cfg.MaxValueSize > 0 {
			limit = min(limit, int64(b.cfg.MaxValueSize))
		}
		b.mu.Lock()
		b.max = limit
		b.mu.Unlock()
		return kv, nil
	})
}

// fail wraps err from a call on kv; when the bucket's stream is gone (it
// was deleted, or a memory bucket was lost in a restart) it also drops kv,
// so that the next call declares the bucket again, once the server has
// removed the old one.
func (b *Bucket[T]) fail(kv jetstream.KeyValue, op, key string, err error) error {
	if jsapi.StreamMissing(err) {
		b.declared.Missing(kv)
	}
	return wrap(op, key, err)
}

func (b *Bucket[T]) encode(key string, v T) ([]byte, error) {
	if err := ValidKey(key); err != nil {
		return nil, err
	}
	data, err := b.codec.Encode(v)
	if err != nil {
		return nil, fmt.Errorf("kv: encode %s: %w", key, err)
	}
	b.mu.Lock()
	limit := b.max
	b.mu.Unlock()
	if limit > 0 && int64(len(data)) > limit {
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

// Get returns the key's current value, or ErrKeyNotFound.
func (b *Bucket[T]) Get(ctx context.Context, key string) (Entry[T], error) {
	if err := ValidKey(key); err != nil {
		return Entry[T]{}, err
	}
	kv, err := b.bucket(ctx)
	if err != nil {
		return Entry[T]{}, err
	}
	e, err := kv.Get(ctx, key)
	if err != nil {
		return Entry[T]{}, b.fail(kv, "get", key, err)
	}
	return b.entry(e)
}

// Put sets the key's value and returns its revision.
func (b *Bucket[T]) Put(ctx context.Context, key string, v T) (uint64, error) {
	data, err := b.encode(key, v)
	if err != nil {
		return 0, err
	}
	kv, err := b.bucket(ctx)
	if err != nil {
		return 0, err
	}
	rev, err := kv.Put(ctx, key, data)
	if err != nil {
		return 0, b.fail(kv, "put", key, err)
	}
	return rev, nil
}

// Create sets the key's value only if it has none (never set, deleted or
// expired), else fails with ErrKeyExists.
func (b *Bucket[T]) Create(ctx context.Context, key string, v T) (uint64, error) {
	return b.create(ctx, key, v)
}

// CreateTTL is Create with a TTL for this key alone: the value expires
// after ttl. The bucket needs LimitMarkerTTL.
func (b *Bucket[T]) CreateTTL(ctx context.Context, key string, v T, ttl time.Duration) (uint64, error) {
	if b.cfg.LimitMarkerTTL == 0 && !b.cfg.Bind {
		return 0, fmt.Errorf("kv: create %s with a TTL: %w: the bucket needs limit_marker_ttl", key, ErrInvalidConfig)
	}
	return b.create(ctx, key, v, jetstream.KeyTTL(ttl))
}

func (b *Bucket[T]) create(ctx context.Context, key string, v T, opts ...jetstream.KVCreateOpt) (uint64, error) {
	data, err := b.encode(key, v)
	if err != nil {
		return 0, err
	}
	kv, err := b.bucket(ctx)
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
		return 0, b.fail(kv, "create", key, err)
	}
	return rev, nil
}

// CompareAndSet sets the key's value only if its current revision is
// revision, else fails with ErrRevisionMismatch.
func (b *Bucket[T]) CompareAndSet(ctx context.Context, key string, v T, revision uint64) (uint64, error) {
	data, err := b.encode(key, v)
	if err != nil {
		return 0, err
	}
	kv, err := b.bucket(ctx)
	if err != nil {
		return 0, err
	}
	rev, err := kv.Update(ctx, key, data, revision)
	if jsapi.WrongLastSequence(err) {
		return 0, fmt.Errorf("%w: %s at revision %d: %w", ErrRevisionMismatch, key, revision, asKeyExists(err))
	}
	if err != nil {
		return 0, b.fail(kv, "compare and set", key, err)
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
// ErrTooManyConflicts; it returns ctx.Err() when ctx ends first. An error
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
	if err := ValidKey(key); err != nil {
		return err
	}
	kv, err := b.bucket(ctx)
	if err != nil {
		return err
	}
	if err := kv.Delete(ctx, key); err != nil {
		return b.fail(kv, "delete", key, err)
	}
	return nil
}

// Purge removes the key's value and its history.
func (b *Bucket[T]) Purge(ctx context.Context, key string) error {
	if err := ValidKey(key); err != nil {
		return err
	}
	kv, err := b.bucket(ctx)
	if err != nil {
		return err
	}
	if err := kv.Purge(ctx, key); err != nil {
		return b.fail(kv, "purge", key, err)
	}
	return nil
}

// Keys lists the keys that have a value.
func (b *Bucket[T]) Keys(ctx context.Context) ([]string, error) {
	kv, err := b.bucket(ctx)
	if err != nil {
		return nil, err
	}
	keys, err := kv.Keys(ctx)
	if errors.Is(err, jetstream.ErrNoKeysFound) {
		return nil, nil
	}
	if err != nil {
		return nil, b.fail(kv, "keys", "", err)
	}
	return keys, nil
}

// History returns the key's revisions that the bucket keeps, oldest first.
func (b *Bucket[T]) History(ctx context.Context, key string) ([]Entry[T], error) {
	if err := ValidKey(key); err != nil {
		return nil, err
	}
	kv, err := b.bucket(ctx)
	if err != nil {
		return nil, err
	}
	hist, err := kv.History(ctx, key)
	if err != nil {
		return nil, b.fail(kv, "history", key, err)
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

// ValidKey reports whether key can be used: one or more tokens separated
// by '.', each made of letters, digits and - _ = /, with no leading or
// trailing '.' and no empty token. Wildcards are for watches only.
func ValidKey(key string) error {
	if key == "" || strings.HasPrefix(key, ".") || strings.HasSuffix(key, ".") || strings.Contains(key, "..") {
		return fmt.Errorf("%w: %q: tokens separated by single dots, none empty", ErrInvalidKey, key)
	}
	for _, r := range key {
		if !keyRune(r) && r != '.' {
			return fmt.Errorf("%w: %q: %q is not allowed (letters, digits, - _ = / and .)", ErrInvalidKey, key, r)
		}
	}
	return nil
}

func keyRune(r rune) bool {
	return r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("-_=/", r)
}

// ValidBucketName reports whether name can name a bucket: letters,
// digits, - and _ only.
func ValidBucketName(name string) error {
	if err := subject.ValidBucket(name); err != nil {
		return fmt.Errorf("kv: %w: bucket %w", ErrInvalidConfig, err)
	}
	return nil
}
