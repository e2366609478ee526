// Package streamwatch runs a supervised watch of a stream: an ordered
// consumer that delivers every message once and in order, and that, after
// an error, a server restart or a replaced connection, resumes from the
// sequence after the last one delivered: no gap among the messages the
// stream still holds, and no duplicate. KV and object-store watches are
// built on it.
package streamwatch

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/corral-go/corral/connection"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// Config describes a watch.
type Config struct {
	Name    string   // the service's name
	Stream  string   // the stream watched
	Filters []string // subjects watched
	// UpdatesOnly starts after what the stream holds when the watch first
	// starts; otherwise the watch first delivers the last message of each
	// subject (the current values), then InitialDone is called.
	UpdatesOnly bool
	// Deliver is called with each message, in stream order, once. An error
	// fails the watch, which starts again with that message.
	Deliver func(ctx context.Context, m jetstream.Msg) error
	// InitialDone is called once, when the current values have been
	// delivered (at once with UpdatesOnly or when there are none).
	InitialDone func(ctx context.Context) error
	// Prepare, if set, runs on each connection before the stream is read:
	// it declares the stream. When the stream it declared turns out to be
	// gone (declared before, then deleted), Missing is called and Prepare
	// runs once more.
	Prepare func(ctx context.Context) error
	Missing func()
}

// Watch is a suture.Service. Its position survives its restarts.
type Watch struct {
	cfg         Config
	src         connection.Source
	last        atomic.Uint64 // last sequence delivered
	started     atomic.Bool   // a consumer has been created once
	initialDone atomic.Bool
	created     atomic.Int64 // the stream's creation time, as UnixNano
}

// New returns a watch that runs when served.
func New(cfg Config, src connection.Source) *Watch { return &Watch{cfg: cfg, src: src} }

// String names the service.
func (w *Watch) String() string { return w.cfg.Name }

// Last is the sequence of the last message delivered.
func (w *Watch) Last() uint64 { return w.last.Load() }

// Serve watches until ctx ends, following replaced connections. It
// returns an error when the stream cannot be read or Deliver fails; served
// again, it resumes after the last message delivered.
func (w *Watch) Serve(ctx context.Context) error {
	for {
		nc, gone, err := w.src.Conn(ctx)
		if err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			return fmt.Errorf("%s: connection: %w", w.cfg.Name, err)
		}
		err = w.watch(ctx, nc, gone)
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if !errors.Is(err, errGone) && !errors.Is(err, errReset) {
			return fmt.Errorf("%s: %w", w.cfg.Name, err)
		}
	}
}

// resetAttempts bounds nats.go's tries to re-create the ordered consumer,
// 1 s apart and doubling: about 7 s, longer than a server restart takes
// once the connection is back.
const resetAttempts = 4

var (
	errGone          = errors.New("connection replaced")
	errStreamDeleted = errors.New("stream deleted")
	// errReset: nats.go replaced the ordered consumer (server restart,
	// missed heartbeats, consumer deleted). It resumes by start sequence,
	// which during the current values would replay older revisions, and
	// on a stream created anew would skip its first messages: the watch
	// starts again instead, which handles both.
	errReset = errors.New("ordered consumer replaced")
)

func (w *Watch) watch(ctx context.Context, nc *nats.Conn, gone <-chan struct{}) error {
	wctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	var wg sync.WaitGroup
	defer wg.Wait()
	watching := make(chan struct{})
	defer close(watching)
	wg.Go(func() {
		select {
		case <-gone:
			cancel(errGone)
		case <-watching:
		}
	})
	// The ordered consumer would follow a re-created stream from the old
	// position, skipping its first messages: stop, and start again as new.
	sub, err := nc.Subscribe("$JS.EVENT.ADVISORY.STREAM.DELETED."+w.cfg.Stream, func(*nats.Msg) {
		cancel(errStreamDeleted)
	})
	if err != nil {
		return err
	}
	defer sub.Unsubscribe()

	js, err := jetstream.New(nc)
	if err != nil {
		return err
	}
	actx, acancel := context.WithTimeout(wctx, 10*time.Second)
	defer acancel()
	s, err := w.stream(actx, js)
	if err != nil {
		if wctx.Err() != nil && ctx.Err() == nil {
			return context.Cause(wctx)
		}
		return err
	}
	// A stream created anew (deleted, or a memory stream lost in a restart)
	// holds only messages never delivered.
	if created := s.CachedInfo().Created.UnixNano(); w.created.Swap(created) != created && w.started.Load() {
		w.last.Store(0)
	}
	// nats-server does not always deliver the deletion advisory (it is
	// queued as the stream's sending loop is told to quit), and nats.go
	// would then try forever to re-create the consumer of a deleted
	// stream: a bounded number of tries fails the watch instead, and
	// served again it declares the stream.
	oc := jetstream.OrderedConsumerConfig{FilterSubjects: w.cfg.Filters, MaxResetAttempts: resetAttempts}
	switch {
	case w.cfg.UpdatesOnly && !w.started.Load():
		info, err := s.Info(actx)
		if err != nil {
			return err
		}
		// What the stream holds now counts as delivered, once and for all.
		w.last.Store(info.State.LastSeq)
		w.started.Store(true)
		oc.DeliverPolicy, oc.OptStartSeq = jetstream.DeliverByStartSequencePolicy, info.State.LastSeq+1
	case !w.initialDone.Load() && !w.cfg.UpdatesOnly:
		// (Re)start the current values: those delivered before are at or
		// below last (last-per-subject comes in stream order) and skipped.
		oc.DeliverPolicy = jetstream.DeliverLastPerSubjectPolicy
	default:
		oc.DeliverPolicy, oc.OptStartSeq = jetstream.DeliverByStartSequencePolicy, w.last.Load()+1
	}
	cons, err := s.OrderedConsumer(actx, oc)
	if err != nil {
		return err
	}
	acancel()
	w.started.Store(true)
	if !w.initialDone.Load() && (w.cfg.UpdatesOnly || cons.CachedInfo().NumPending == 0) {
		if err := w.signalInitial(ctx); err != nil {
			return err
		}
	}
	it, err := cons.Messages()
	if err != nil {
		return err
	}
	defer it.Stop()
	// Next may be stuck re-creating the consumer of a deleted stream, deaf
	// to wctx: stopping the iterator ends it.
	stopped := make(chan struct{})
	defer close(stopped)
	go func() {
		select {
		case <-wctx.Done():
			it.Stop()
		case <-stopped:
		}
	}()
	consumer := cons.CachedInfo().Name // the server consumer created above
	for {
		msg, err := it.Next(jetstream.NextContext(wctx))
		if err != nil {
			switch {
			case ctx.Err() != nil:
				return ctx.Err()
			case wctx.Err() != nil:
				return context.Cause(wctx)
			case errors.Is(err, nats.ErrConnectionClosed), errors.Is(err, jetstream.ErrConnectionClosed):
				return errGone
			}
			return err
		}
		meta, err := msg.Metadata()
		if err != nil {
			return err
		}
		if meta.Consumer != consumer {
			return errReset
		}
		seq := meta.Sequence.Stream
		if seq > w.last.Load() { // else delivered before a resume
			if err := w.cfg.Deliver(ctx, msg); err != nil {
				return fmt.Errorf("deliver sequence %d: %w", seq, err)
			}
			w.last.Store(seq)
		}
		if !w.initialDone.Load() && meta.NumPending == 0 {
			if err := w.signalInitial(ctx); err != nil {
				return err
			}
		}
	}
}

// stream declares the stream (Prepare) and looks it up.
func (w *Watch) stream(ctx context.Context, js jetstream.JetStream) (jetstream.Stream, error) {
	for again := w.cfg.Missing != nil; ; again = false {
		if w.cfg.Prepare != nil {
			if err := w.cfg.Prepare(ctx); err != nil {
				return nil, err
			}
		}
		s, err := js.Stream(ctx, w.cfg.Stream)
		if again && errors.Is(err, jetstream.ErrStreamNotFound) {
			w.cfg.Missing()
			continue
		}
		return s, err
	}
}

func (w *Watch) signalInitial(ctx context.Context) error {
	if w.cfg.InitialDone != nil {
		if err := w.cfg.InitialDone(ctx); err != nil {
			return err
		}
	}
	w.initialDone.Store(true)
	return nil
}
