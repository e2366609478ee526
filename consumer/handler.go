package consumer

import (
	"context"
	"sync/atomic"
	"time"

	"github.com/corral-go/corral/connection"
	"github.com/corral-go/corral/internal/event"
	"github.com/corral-go/corral/supervisor"
)

// Handler handles messages. It returns nil when the message was handled;
// an error counts it as failed (core NATS has no redelivery: the error is
// counted and the message is gone). ctx is cancelled when the handler's
// per-message timeout runs out, or when it is being stopped and its grace
// period has run out.
type Handler interface {
	Handle(ctx context.Context, m *Msg) error
}

// HandlerFunc adapts a function to [Handler].
type HandlerFunc func(ctx context.Context, m *Msg) error

// Handle calls f.
func (f HandlerFunc) Handle(ctx context.Context, m *Msg) error { return f(ctx, m) }

// invoker runs the handler for one core message: a plain handler, or a
// request handler and its reply.
type invoker func(ctx context.Context, m *Msg) error

// handleInvoker adapts a Handler.
func handleInvoker(h Handler) invoker {
	return h.Handle
}

// handlerBase is what every kind of handler has: its declaration, its
// counters (which live as long as the declaration), what Status reads of
// its current run, and whether it receives messages.
type handlerBase struct {
	name   string
	cfg    Config
	src    connection.Source
	events *event.Emitter
	stats  *counters
	flush  *flusher // the group's, shared by its handlers

	current atomic.Pointer[runView]
	ready   atomic.Bool
	// subscribedOnce says the current run has subscribed at least once;
	// newRun clears it.
	subscribedOnce atomic.Bool
	// started tells the tree that a run has started: subscribed, or
	// pulling from its consumer. Set once, before Serve.
	started func()
}

func (b *handlerBase) base() *handlerBase { return b }

// OnStarted takes the function that tells the tree the handler has
// started; it makes the handler a [supervisor.Starter], so that a handler
// failing at every start (its stream missing, say) is reported once, not
// at each restart.
func (b *handlerBase) OnStarted(started func()) { b.started = started }

// subscribed marks the handler ready and reports it.
func (b *handlerBase) subscribed(ev Subscribed) {
	b.ready.Store(true)
	b.subscribedOnce.Store(true)
	b.events.Emit(ev)
	if b.started != nil {
		b.started()
	}
}

// String names the handler in the tree.
func (b *handlerBase) String() string { return "handler/" + b.name }

// reportPanic emits a HandlerPanicked event for a panic the pool
// recovered; the pool rate-limits them.
func (b *handlerBase) reportPanic(m *Msg, pe *supervisor.PanicError, suppressed uint64) {
	b.events.Emit(HandlerPanicked{EventTime: b.events.Stamp(), Handler: b.name, Subject: m.Subject(), Err: pe, Suppressed: suppressed})
}

// reportFailure emits a HandlerFailed event for an error the handler
// returned for m, unless the handler's log_failures is false; the pool
// rate-limits them.
func (b *handlerBase) reportFailure(m *Msg, err error, suppressed uint64) {
	if !b.cfg.logFailures() {
		return
	}
	ev := HandlerFailed{EventTime: b.events.Stamp(), Handler: b.name, Subject: m.Subject(), Err: err, Suppressed: suppressed}
	if md := m.Metadata(); md != nil {
		ev.Stream, ev.Consumer, ev.Sequence, ev.Deliveries = md.Stream, md.Consumer, md.Sequence.Stream, md.NumDelivered
	}
	b.events.Emit(ev)
}

// drained emits the Drained event of a stop that began at start, unless
// the run never subscribed and had nothing to drain: a start that failed
// is reported by the tree, once per episode.
func (b *handlerBase) drained(subject string, start time.Time, finished, abandoned, returned uint64) {
	if !b.subscribedOnce.Load() && finished == 0 && abandoned == 0 && returned == 0 {
		return
	}
	b.events.Emit(Drained{EventTime: b.events.Stamp(), Handler: b.name, Subject: subject,
		Finished: finished, Abandoned: abandoned, Returned: returned, Took: time.Since(start)})
}
