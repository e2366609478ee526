// Package streamwatch runs a supervised watch of a stream: a consumer of
// the ordered kind (ephemeral, unacknowledged, checked for gaps) that
// delivers every message once and in order, and that, after an error, a
// lost consumer, a server restart, a reconnect or a replaced connection,
// resumes from the sequence after the last one delivered: no gap among
// the messages the stream still holds, and no duplicate. KV and
// object-store watches are built on it.
package streamwatch

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/corral-go/corral/connection"
	"github.com/corral-go/corral/internal/jsapi"
	"github.com/corral-go/corral/supervisor"
)

// Config describes a watch.
type Config struct {
	Name    string                  // the service's name
	Stream  string                  // the stream watched
	API     connection.JetStreamAPI // the JetStream it is in
	Filters []string                // subjects watched
	// UpdatesOnly starts after what the stream holds when the watch first
	// starts; otherwise the watch first delivers the last message of each
	// subject (the current values, as the stream held them when the watch
	// first read them), then InitialDone is called. Started again before
	// InitialDone, it delivers the current values it had yet to deliver
	// and every message stored since that first read, superseded or not.
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

// Watch is a suture.Service that runs the watch. Its position (the last
// sequence delivered, whether the current values are all delivered)
// survives its restarts; serve it once at a time.
type Watch struct {
	cfg         Config
	src         connection.Source
	last        atomic.Uint64 // last sequence delivered, or passed over as superseded
	started     atomic.Bool   // a consumer has been created once
	initialDone atomic.Bool
	// snapshot is the stream's last sequence when the current values were
	// first read: at or below it a message is a current value only if it
	// is its subject's last there; above it, every message is a change.
	snapshot atomic.Uint64
	created  atomic.Int64 // the stream's creation time, as UnixNano
	onStart  func()       // see OnStarted
}

// New returns a watch that runs when served.
func New(cfg Config, src connection.Source) *Watch { return &Watch{cfg: cfg, src: src} }

// String names the service.
func (w *Watch) String() string { return w.cfg.Name }

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
			return fmt.Errorf("%s: %w", w.cfg.Name, err)
		}
		err = w.watch(ctx, nc, gone)
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if errors.Is(err, jsapi.ErrConnGone) || errors.Is(err, errReset) || errors.Is(err, errSnapshot) {
			continue
		}
		err = fmt.Errorf("%s: %w", w.cfg.Name, err)
		if jsapi.Unavailable(err) && !errors.As(err, new(callbackError)) {
			// A node lost, a leader being elected: the restart resumes.
			return supervisor.Unavailable(err)
		}
		return err
	}
}

// OnStarted keeps started, which the watch calls each time it reads the
// stream again after it started: its failures are then over (see
// supervisor.Starter).
func (w *Watch) OnStarted(started func()) { w.onStart = started }

// Consumers of a watch: the heartbeat of their pull requests, two of
// which missed say the consumer is lost (as the handlers' pulls); how
// long one outlives the watch that made it (nats.go's ordered
// consumers').
const (
	heartbeat         = 2 * time.Second
	inactiveThreshold = 5 * time.Minute
)

// callbackError is a failure of the watch's callbacks (Deliver,
// InitialDone): the application's, never a sign of JetStream's state,
// whatever error it wraps.
type callbackError struct{ err error }

func (e callbackError) Error() string { return e.err.Error() }
func (e callbackError) Unwrap() error { return e.err }

var (
	errStreamDeleted = errors.New("stream deleted")
	// errReset: the consumer lost a message (a gap in its sequence) or
	// was lost (missed heartbeats, deleted: a node lost, a server
	// restarted). The watch starts again from where it is, which during
	// the current values and on a stream created anew is not the next
	// sequence.
	errReset = errors.New("consumer lost")
	// errSnapshot: the consumer of the current values reached a message
	// stored after the snapshot. The watch goes on by sequence instead,
	// which delivers, too, those stored and superseded while the server
	// read the current values.
	errSnapshot = errors.New("current values read")
)
