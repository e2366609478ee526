package corral

import (
	"net/http"
	"time"

	"github.com/nats-io/nats.go"
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
	tracer Tracer
	ops    func(*Client) (http.Handler, error)
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
