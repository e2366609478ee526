package corral

import (
	"context"
	"maps"
	"strings"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"go.opentelemetry.io/otel/baggage"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"
	"go.opentelemetry.io/otel/trace"

	"github.com/corral-go/corral/publisher"
)

// tracerName is the instrumentation scope of Corral's spans.
const tracerName = "github.com/corral-go/corral"

// natsSystem is messaging.system for NATS, which the semantic conventions
// do not list.
var natsSystem = semconv.MessagingSystemKey.String("nats")

// tracing is what WithTracerProvider set up: the Client's tracer and the
// propagators of W3C trace context and baggage. A Client given no tracer
// provider has none, and traces nothing.
type tracing struct {
	tracer trace.Tracer
	prop   propagation.TextMapPropagator
	// fields are the headers prop writes, dropped from a message before
	// its own are written, so that none is left from another trace.
	fields []string
}

// useTracing traces the Client with tp's tracer, when tp is not nil: it
// installs the middleware that runs handlers in spans, before any handler
// is declared. With a nil tp it does nothing, and nothing is traced.
func (c *Client) useTracing(tp trace.TracerProvider) {
	if tp == nil {
		return
	}
	prop := propagation.NewCompositeTextMapPropagator(propagation.TraceContext{}, propagation.Baggage{})
	c.trace = &tracing{
		tracer: tp.Tracer(tracerName, trace.WithSchemaURL(semconv.SchemaURL)),
		prop:   prop,
		fields: prop.Fields(),
	}
	c.consumers.Use(c.trace.middleware)
}

// send is one kind of message a Client sends, as its span names it.
type send struct {
	op   string                // messaging.operation.name, and the span name's first word
	kind trace.SpanStartOption // the span's kind
}

// The kinds of message sent, and the options of the spans that receive
// them; made once, as each would allocate on every message. They are
// never written.
var (
	sendPublish = send{op: "send", kind: trace.WithSpanKind(trace.SpanKindProducer)}
	sendEnqueue = send{op: "enqueue", kind: trace.WithSpanKind(trace.SpanKindProducer)}
	sendRequest = send{op: "request", kind: trace.WithSpanKind(trace.SpanKindClient)}

	consumerKind = trace.WithSpanKind(trace.SpanKindConsumer)
	serverKind   = trace.WithSpanKind(trace.SpanKindServer)
	newRoot      = trace.WithNewRoot()
)

// startSend starts the span of a message of size bytes sent to subject,
// with the Nats-Msg-Id id (if not empty), a child of ctx's span, and
// returns ctx with it. name is the span name's second word: subject, or
// the task queue for an enqueue. The attributes a sampler may look at are
// given at the start, as the semantic conventions ask; the others only to
// a span that records.
func (t *tracing) startSend(ctx context.Context, s send, name, subject string, size int, id string) (context.Context, trace.Span) {
	ctx, span := t.tracer.Start(ctx, s.op+" "+name, s.kind, trace.WithAttributes(
		natsSystem,
		semconv.MessagingOperationTypeSend,
		semconv.MessagingOperationName(s.op),
		semconv.MessagingDestinationName(subject)))
	if span.IsRecording() {
		span.SetAttributes(semconv.MessagingMessageBodySize(size))
		if id != "" {
			span.SetAttributes(semconv.MessagingMessageID(id))
		}
	}
	return ctx, span
}

// propagates reports whether ctx has what the propagators write: a valid
// span context, or baggage.
func propagates(ctx context.Context) bool {
	return trace.SpanContextFromContext(ctx).IsValid() || baggage.FromContext(ctx).Len() > 0
}

// inject writes the trace context of ctx (and its baggage) into h, over
// any h had, when ctx has any: h belongs to the message being sent, never
// to the caller.
func (t *tracing) inject(ctx context.Context, h nats.Header) {
	if !propagates(ctx) {
		return
	}
	for _, f := range t.fields {
		delete(h, f)
	}
	t.prop.Inject(ctx, headerCarrier(h))
}

// injected is h, when ctx has nothing to inject, or else a copy of h with
// ctx's trace context injected; h is not changed.
func (t *tracing) injected(ctx context.Context, h nats.Header) nats.Header {
	if !propagates(ctx) {
		return h
	}
	out := make(nats.Header, len(h)+len(t.fields))
	maps.Copy(out, h)
	t.inject(ctx, out)
	return out
}

// publishOpts returns opts followed by one that injects ctx's trace
// context into the publisher's copy of the message and names its
// Nats-Msg-Id on span: the publisher has given it one by then, unless
// publisher.no_msg_id. opts' array is not written to.
func (t *tracing) publishOpts(ctx context.Context, span trace.Span, opts []publisher.Option) []publisher.Option {
	return append(opts[:len(opts):len(opts)], func(h nats.Header) {
		if id := h.Get(jetstream.MsgIDHeader); id != "" && span.IsRecording() {
			span.SetAttributes(semconv.MessagingMessageID(id))
		}
		t.inject(ctx, h)
	})
}

// end ends span, with err, if not nil, as its status and error.type.
func (t *tracing) end(span trace.Span, err error) {
	if err != nil {
		span.SetStatus(codes.Error, err.Error())
		span.SetAttributes(semconv.ErrorType(err))
	}
	span.End()
}

// headerCarrier is the propagators' view of NATS headers. NATS header
// names are case-sensitive; the W3C names are written in lower case, and
// read in any case, as HTTP carriers write them capitalised.
type headerCarrier nats.Header

// Get returns the first value of key, matched exactly or, failing that,
// in any case.
func (c headerCarrier) Get(key string) string {
	if v := c[key]; len(v) > 0 {
		return v[0]
	}
	for k, v := range c {
		if len(v) > 0 && strings.EqualFold(k, key) {
			return v[0]
		}
	}
	return ""
}

// Set sets key to the single value.
func (c headerCarrier) Set(key, value string) { c[key] = []string{value} }

// Keys lists the header names.
func (c headerCarrier) Keys() []string {
	keys := make([]string, 0, len(c))
	for k := range c {
		keys = append(keys, k)
	}
	return keys
}
