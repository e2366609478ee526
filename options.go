package corral

import (
	"time"

	"github.com/nats-io/nats.go"
	"go.opentelemetry.io/otel/trace"
	"go.uber.org/zap"

	"github.com/corral-go/corral/supervisor"
)

// Event is anything that happens in a Client's tree. Tell events apart with
// a type switch on the structs of each package: supervisor.ChildFailed,
// connection.Disconnected, and so on.
type Event = supervisor.Event

// Option injects behaviour that cannot live in a configuration file.
type Option func(*options)

type options struct {
	logger *zap.Logger
	hook   supervisor.Hook
	nats   []nats.Option
	server func(ServerConfig) (EmbeddedServer, error)
	now    func() time.Time
	tracer trace.TracerProvider
	ops    opsOptions // metrics.go, logging.go
}

// WithLogger sends the Client's logs to l. Default: none (zap.NewNop).
// Every event is logged at its level; credentials never are.
func WithLogger(l *zap.Logger) Option {
	return func(o *options) { o.logger = l }
}

// WithEventHook calls hook with every event, synchronously: it must return
// quickly and must not block.
func WithEventHook(hook func(Event)) Option {
	return func(o *options) { o.hook = hook }
}

// WithNATSOptions adds nats.go options, applied after those built from the
// configuration, so they win. Connection callbacks set here (closed,
// disconnected, error...) are called after Corral's own, which still run.
func WithNATSOptions(opts ...nats.Option) Option {
	return func(o *options) { o.nats = append(o.nats, opts...) }
}

// WithClock sets the clock that stamps events and status. Default time.Now.
func WithClock(now func() time.Time) Option {
	return func(o *options) { o.now = now }
}

// WithTracerProvider traces the Client with OpenTelemetry, following the
// messaging semantic conventions: Publish, PublishMsg, PublishSync,
// PublishCore, PublishCoreMsg, Request, RequestMsg and Enqueue run in
// spans whose W3C trace context (and baggage) goes in the message's
// headers, replacing any the message had, in a copy: the caller's message
// is not changed. Handlers, request handlers and task workers run in
// spans that continue the sender's trace, and are linked to its span; the
// ctx a handler is given holds its span, so what it sends with that ctx
// continues the trace. The Client uses tp and its own propagators, never
// the global ones. What goes around the Client (Publisher, Conn) is not
// traced. The headers added (a traceparent of 55 bytes, and tracestate
// and baggage when the context has them) count against the server's max
// payload. Default none (or nil): nothing is traced, no header is
// written, and tracing costs nothing.
func WithTracerProvider(tp trace.TracerProvider) Option {
	return func(o *options) { o.tracer = tp }
}
