package objectstore

import (
	"context"
	"errors"
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

// Store is an object store that follows the connection: after it is
// replaced, the next call uses the new one. Objects are streamed in
// chunks, so their size does not bound memory. Its methods are safe for
// concurrent use.
type Store struct {
	name   string
	cfg    Config
	src    connection.Source
	events *event.Emitter

	declared redeclare.Declared[jetstream.ObjectStore]

	mu        sync.Mutex
	jsConn    *nats.Conn
	js        jetstream.JetStream // one per connection
	streamFor jetstream.ObjectStore
	stream    jetstream.Stream // streamFor's stream, once looked up
}

// Open returns the store name, declared (or bound) on first use. It fails
// with [supervisor.ErrInvalidConfig] when cfg or the name is invalid (a store's name
// is letters, digits, - and _, at most 251 bytes so that its stream's,
// "OBJ_<name>", fits in JetStream's 255).
func Open(name string, cfg Config, src connection.Source) (*Store, error) {
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("objectstore: %s: %w", name, err)
	}
	if err := subject.ValidBucket(name); err != nil {
		return nil, fmt.Errorf("objectstore: %w: store %w", supervisor.ErrInvalidConfig, err)
	}
	return &Store{name: name, cfg: cfg, src: src, events: event.New(cfg.Events)}, nil
}

// Name returns the store's name.
func (s *Store) Name() string { return s.name }

// Raw returns the nats.go store on the current connection, for
// everything else it offers. It declares the store if need be.
func (s *Store) Raw(ctx context.Context) (jetstream.ObjectStore, error) { return s.current(ctx) }

// object is the store declared on the current connection, for a call on
// the objects names: every call that names an object checks the names
// here first, so that none reaches the server in a subject it would close
// the connection for.
func (s *Store) object(ctx context.Context, op string, names ...string) (jetstream.ObjectStore, error) {
	for _, name := range names {
		if err := checkName(s.name, name); err != nil {
			return nil, fmt.Errorf("%w: %s: %w", ErrInvalidName, op, err)
		}
	}
	return s.current(ctx)
}

// current is the store declared on the current connection.
func (s *Store) current(ctx context.Context) (jetstream.ObjectStore, error) {
	nc, _, err := s.src.Conn(ctx)
	if err != nil {
		return nil, err
	}
	store, recreated, err := s.declared.Get(ctx, nc, func(ctx context.Context) (jetstream.ObjectStore, time.Time, error) {
		return s.declare(ctx, nc)
	})
	if recreated {
		s.events.Emit(StoreRecreated{EventTime: s.events.Stamp(), Store: s.name})
	}
	if errors.Is(err, ErrStoreNotFound) {
		return nil, err // it names the store, after its own "objectstore: "
	}
	if err != nil {
		return nil, fmt.Errorf("objectstore: open %s: %w", s.name, err)
	}
	return store, nil
}

// declare declares (or binds) the store on nc and looks up its stream; it
// returns the store with the time its stream was created. Each request
// is asked until answered (jsapi.Ask): a cluster answers one of several
// processes declaring a new store at once, and may answer no lookup of
// it until its stream has a leader.
func (s *Store) declare(ctx context.Context, nc *nats.Conn) (jetstream.ObjectStore, time.Time, error) {
	js, err := s.jetStream(nc)
	if err != nil {
		return nil, time.Time{}, err
	}
	var store jetstream.ObjectStore
	if s.cfg.Bind {
		store, err = jsapi.Ask(ctx, func(ctx context.Context) (jetstream.ObjectStore, error) { return js.ObjectStore(ctx, s.name) })
		if errors.Is(err, jetstream.ErrBucketNotFound) || errors.Is(err, jetstream.ErrStreamNotFound) {
			return nil, time.Time{}, fmt.Errorf("%w: %s: %w", ErrStoreNotFound, s.name, err)
		}
	} else {
		// Create first, as stream.Declare does: a store that already
		// matches is not updated on every start.
		store, err = jsapi.Ask(ctx, func(ctx context.Context) (jetstream.ObjectStore, error) {
			return js.CreateObjectStore(ctx, s.cfg.jetStream(s.name))
		})
		if errors.Is(err, jetstream.ErrBucketExists) {
			store, err = jsapi.Ask(ctx, func(ctx context.Context) (jetstream.ObjectStore, error) {
				return js.UpdateObjectStore(ctx, s.cfg.jetStream(s.name))
			})
		}
	}
	if err != nil {
		return nil, time.Time{}, err
	}
	stream, err := jsapi.AskDeclared(ctx, func(ctx context.Context) (jetstream.Stream, error) { return js.Stream(ctx, streamName(s.name)) })
	if err != nil {
		return nil, time.Time{}, err
	}
	s.mu.Lock()
	s.streamFor, s.stream = store, stream
	s.mu.Unlock()
	return store, stream.CachedInfo().Created, nil
}

// jetStream is the JetStream context of nc. One per connection: its first
// async publish subscribes for replies until the connection closes. Acks
// that never come (a dead path) fail after jsapi.Timeout instead of holding
// a put.
func (s *Store) jetStream(nc *nats.Conn) (jetstream.JetStream, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.jsConn == nc && s.js != nil {
		return s.js, nil
	}
	js, err := s.cfg.JetStreamAPI.New(nc, jetstream.WithPublishAsyncTimeout(jsapi.Timeout))
	if err != nil {
		return nil, err
	}
	s.jsConn, s.js = nc, js
	return js, nil
}

// streamOf is the stream of store, as its declaration looked it up.
func (s *Store) streamOf(ctx context.Context, store jetstream.ObjectStore) (jetstream.JetStream, jetstream.Stream, error) {
	s.mu.Lock()
	js, stream := s.js, s.stream
	if s.streamFor != store {
		stream = nil
	}
	s.mu.Unlock()
	if stream != nil {
		return js, stream, nil
	}
	stream, err := js.Stream(ctx, streamName(s.name))
	if err != nil {
		return nil, nil, err
	}
	s.mu.Lock()
	s.streamFor, s.stream = store, stream
	s.mu.Unlock()
	return js, stream, nil
}

// fail wraps err from a call on store. When the store's stream is gone
// (it was deleted, or a memory store was lost in a restart) it also drops
// store, so that the next call declares the store again, once the server
// has removed the old one.
func (s *Store) fail(store jetstream.ObjectStore, op, name string, err error) error {
	if jsapi.StreamMissing(err) {
		s.declared.Missing(store)
	}
	if uerr := jsapi.Unreached(s.cfg.JetStreamAPI, err); uerr != nil {
		return fmt.Errorf("objectstore: %s %s: %w", op, name, uerr)
	}
	return wrap(op, name, err)
}

// Info describes the object name.
func (s *Store) Info(ctx context.Context, name string) (*jetstream.ObjectInfo, error) {
	store, err := s.object(ctx, "info", name)
	if err != nil {
		return nil, err
	}
	info, err := store.GetInfo(ctx, name)
	if err != nil {
		return nil, s.fail(store, "info", name, err)
	}
	return info, nil
}

// List describes every object in the store.
func (s *Store) List(ctx context.Context) ([]*jetstream.ObjectInfo, error) {
	store, err := s.current(ctx)
	if err != nil {
		return nil, err
	}
	infos, err := store.List(ctx)
	if errors.Is(err, jetstream.ErrNoObjectsFound) {
		return nil, nil
	}
	if err != nil {
		return nil, s.fail(store, "list", "", err)
	}
	return infos, nil
}

// Delete removes the object name.
func (s *Store) Delete(ctx context.Context, name string) error {
	store, err := s.object(ctx, "delete", name)
	if err != nil {
		return err
	}
	if err := store.Delete(ctx, name); err != nil {
		return s.fail(store, "delete", name, err)
	}
	return nil
}

// AddLink makes name a link to the object target of this store: getting
// name gets target.
func (s *Store) AddLink(ctx context.Context, name, target string) (*jetstream.ObjectInfo, error) {
	store, err := s.object(ctx, "link", name, target)
	if err != nil {
		return nil, err
	}
	to, err := store.GetInfo(ctx, target)
	if err != nil {
		return nil, s.fail(store, "link", target, err)
	}
	info, err := store.AddLink(ctx, name, to)
	if err != nil {
		return nil, s.fail(store, "link", name, err)
	}
	return info, nil
}
