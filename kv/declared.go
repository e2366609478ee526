package kv

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/corral-go/corral/connection"
	"github.com/corral-go/corral/internal/event"
	"github.com/corral-go/corral/internal/jsapi"
	"github.com/corral-go/corral/internal/redeclare"
	"github.com/corral-go/corral/internal/subject"
	"github.com/corral-go/corral/supervisor"
)

// handle is one bucket as every typed view of it (see Typed) shares it:
// its declaration, the bucket declared on the current connection, and
// the largest value it accepts.
type handle struct {
	name   string
	cfg    Config
	src    connection.Source
	events *event.Emitter

	declared redeclare.Declared[jetstream.KeyValue]

	mu  sync.Mutex
	max int64 // largest value accepted, once known
}

func newHandle(name string, cfg Config, src connection.Source) (*handle, error) {
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("kv: bucket %s: %w", name, err)
	}
	if err := subject.ValidBucket(name); err != nil {
		return nil, fmt.Errorf("kv: %w: bucket %w", supervisor.ErrInvalidConfig, err)
	}
	return &handle{name: name, cfg: cfg, src: src, events: event.New(cfg.Events)}, nil
}

// current is the nats.go bucket on the current connection, declared (or
// bound) on first use.
func (h *handle) current(ctx context.Context) (jetstream.KeyValue, error) {
	nc, _, err := h.src.Conn(ctx)
	if err != nil {
		return nil, err
	}
	kv, recreated, err := h.declared.Get(ctx, nc, func(ctx context.Context) (jetstream.KeyValue, time.Time, error) {
		return h.declare(ctx, nc)
	})
	if recreated {
		h.events.Emit(BucketRecreated{EventTime: h.events.Stamp(), Bucket: h.name})
	}
	return kv, err
}

// declare declares (or binds) the bucket on nc, and returns it with the
// time its stream was created.
func (h *handle) declare(ctx context.Context, nc *nats.Conn) (jetstream.KeyValue, time.Time, error) {
	js, err := h.cfg.JetStreamAPI.New(nc)
	if err != nil {
		return nil, time.Time{}, err
	}
	kv, err := h.cfg.open(ctx, js, h.name)
	if err != nil {
		return nil, time.Time{}, err
	}
	created, err := createdAt(ctx, kv)
	if err != nil {
		return nil, time.Time{}, fmt.Errorf("kv: bucket %s: %w", h.name, err)
	}
	limit := nc.MaxPayload()
	if h.cfg.MaxValueSize > 0 {
		limit = min(limit, int64(h.cfg.MaxValueSize))
	}
	h.mu.Lock()
	h.max = limit
	h.mu.Unlock()
	return kv, created, nil
}

// createdAt is when the stream of kv, just declared, was created: what
// tells a bucket created anew from the one declared before.
func createdAt(ctx context.Context, kv jetstream.KeyValue) (time.Time, error) {
	st, err := jsapi.AskDeclared(ctx, kv.Status)
	if err != nil {
		return time.Time{}, err
	}
	bs, ok := st.(*jetstream.KeyValueBucketStatus)
	if !ok {
		return time.Time{}, fmt.Errorf("status of type %T", st)
	}
	return bs.StreamInfo().Created, nil
}

// limit is the largest value the bucket accepts, 0 until it is declared.
func (h *handle) limit() int64 {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.max
}

// fail wraps err from a call on kv. When the bucket's stream is gone (it
// was deleted, or a memory bucket was lost in a restart) it also drops
// kv, so that the next call declares the bucket again, once the server
// has removed the old one.
func (h *handle) fail(kv jetstream.KeyValue, op, key string, err error) error {
	if jsapi.StreamMissing(err) {
		h.declared.Missing(kv)
	}
	if uerr := jsapi.Unreached(h.cfg.JetStreamAPI, err); uerr != nil {
		return fmt.Errorf("kv: %s %s: %w", op, key, uerr)
	}
	return wrap(op, key, err)
}
