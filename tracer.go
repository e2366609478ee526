package corral

import (
	"context"

	"github.com/nats-io/nats.go"

	"github.com/corral-go/corral/consumer"
	"github.com/corral-go/corral/publisher"
	"github.com/corral-go/corral/tasks"
)

// Tracer traces the messages a Client sends and the handlers it runs.
// Package tracing implements it with OpenTelemetry; WithTracer installs
// one. Its methods are called concurrently.
type Tracer interface {
	// StartSend begins the trace of one message the Client sends: the
	// send goes on with the ctx it returns, and ends the span it returns.
	StartSend(ctx context.Context, s Send) (context.Context, SendSpan)
	// Handler wraps every handler and request handler the Client runs,
	// outside the application's middleware.
	Handler(next consumer.Handler) consumer.Handler
	// Tasks wraps the handler of this process's worker of queue, whose
	// configuration is cfg.
	Tasks(queue string, cfg tasks.Config, h tasks.Handler) tasks.Handler
}

// Send describes a message the Client sends, for its Tracer.
type Send struct {
	// Op is what sends it: "send" (Publish, PublishMsg, PublishSync,
	// PublishCore, PublishCoreMsg), "request" (Request, RequestMsg) or
	// "enqueue" (Enqueue).
	Op string
	// Name is what the message goes to: its subject, or for Enqueue the
	// task queue's name.
	Name string
	// Subject is the message's subject.
	Subject string
	// Size is the size of the message's data.
	Size int
	// MsgID is the message's Nats-Msg-Id when the caller set it in the
	// message's headers (PublishCoreMsg). The publisher's id, set later,
	// reaches SendSpan.Inject in the headers.
	MsgID string
}

// SendSpan is the trace of one message the Client sends.
type SendSpan interface {
	// Inject writes the trace context into h, the headers of the
	// Client's own copy of the message, in which the publisher has set
	// the Nats-Msg-Id, if any.
	Inject(h nats.Header)
	// Header returns h with the trace context written in, in a copy
	// when it writes any: h is the caller's and is not changed.
	Header(h nats.Header) nats.Header
	// End ends the span; err, when not nil, marks it failed.
	End(err error)
}

// WithTracer traces the Client with t (package tracing: OpenTelemetry,
// following the messaging semantic conventions): Publish, PublishMsg,
// PublishSync, PublishCore, PublishCoreMsg, Request, RequestMsg and
// Enqueue run in spans whose trace context goes in the message's headers,
// in a copy: the caller's message is not changed. Handlers, request
// handlers and task workers run in spans that continue the sender's
// trace. What goes around the Client (Publisher, Conn) is not traced.
// Default none (or nil): nothing is traced, no header is written, and
// tracing costs a nil check per send.
func WithTracer(t Tracer) Option {
	return func(o *options) { o.tracer = t }
}

// useTracer installs t, if any: the handlers' outermost middleware.
func (c *Client) useTracer(t Tracer) {
	if t == nil {
		return
	}
	c.tracer = t
	c.consumers.Use(t.Handler)
}

// traced adds span's header writer to opts, in a new slice: opts is the
// caller's.
func traced(span SendSpan, opts []publisher.Option) []publisher.Option {
	return append(opts[:len(opts):len(opts)], span.Inject)
}
