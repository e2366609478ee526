package tracing

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
	"go.opentelemetry.io/otel/trace/noop"

	"github.com/corral-go/corral"
)

// tracerName is the instrumentation scope of Corral's spans.
const tracerName = "github.com/corral-go/corral"

// natsSystem is messaging.system for NATS, which the semantic conventions
// do not list.
var natsSystem = semconv.MessagingSystemKey.String("nats")

// Tracer traces a Client with OpenTelemetry, following the messaging
// semantic conventions (v1.43.0): it is the corral.Tracer that
// corral.WithTracer takes. Sends (Publish, PublishCore, Request,
// Enqueue...) start Producer spans (Client for requests) whose W3C trace
// context and baggage go in the message's headers; handlers, request
// handlers and task workers run in "process <handler>" spans (Consumer;
// Server for requests), children of the sender's span and linked to it.
// The ctx a handler is given holds its span, so what it sends with that
// ctx continues the trace. It uses its provider and its own propagators,
// never the global ones. The headers added (a traceparent of 55 bytes,
// and tracestate and baggage when the context has them) count against
// the server's max payload. It is safe for concurrent use.
type Tracer struct {
	tracer trace.Tracer
	prop   propagation.TextMapPropagator
	// fields are the header names prop writes.
	fields []string
}

// New returns a Tracer whose spans tp makes: corral.WithTracer(tracing.New(tp)).
// A nil tp makes none (a no-op provider).
func New(tp trace.TracerProvider) *Tracer {
	if tp == nil {
		tp = noop.NewTracerProvider()
	}
	prop := propagation.NewCompositeTextMapPropagator(propagation.TraceContext{}, propagation.Baggage{})
	return &Tracer{
		tracer: tp.Tracer(tracerName, trace.WithSchemaURL(semconv.SchemaURL)),
		prop:   prop,
		fields: prop.Fields(),
	}
}

// The span options of each kind of message sent, and of the spans that
// receive them; made once, as each would allocate on every message. They
// are never written.
var (
	producerKind = trace.WithSpanKind(trace.SpanKindProducer)
	clientKind   = trace.WithSpanKind(trace.SpanKindClient)
	consumerKind = trace.WithSpanKind(trace.SpanKindConsumer)
	serverKind   = trace.WithSpanKind(trace.SpanKindServer)
	newRoot      = trace.WithNewRoot()
)

// StartSend starts the span of the message s describes, a child of ctx's
// span, and returns ctx with it; the span is named by the operation and
// s.Name ("send orders.created", "enqueue render"). The attributes a
// sampler may look at are given at the start, as the semantic
// conventions ask; the others only to a span that records.
func (t *Tracer) StartSend(ctx context.Context, s corral.Send) (context.Context, corral.SendSpan) {
	kind := producerKind
	if s.Op == "request" {
		kind = clientKind
	}
	ctx, span := t.tracer.Start(ctx, s.Op+" "+s.Name, kind, trace.WithAttributes(
		natsSystem,
		semconv.MessagingOperationTypeSend,
		semconv.MessagingOperationName(s.Op),
		semconv.MessagingDestinationName(s.Subject)))
	if span.IsRecording() {
		span.SetAttributes(semconv.MessagingMessageBodySize(s.Size))
		if s.MsgID != "" {
			span.SetAttributes(semconv.MessagingMessageID(s.MsgID))
		}
	}
	return ctx, &sendSpan{t: t, ctx: ctx, span: span}
}

// sendSpan is the span of one message sent, and the ctx it is in.
type sendSpan struct {
	t    *Tracer
	ctx  context.Context
	span trace.Span
}

// Inject names the message's Nats-Msg-Id on the span (the publisher has
// given it one by then, unless publisher.no_msg_id) and writes the trace
// context into h, the publisher's copy of the message.
func (s *sendSpan) Inject(h nats.Header) {
	if id := h.Get(jetstream.MsgIDHeader); id != "" && s.span.IsRecording() {
		s.span.SetAttributes(semconv.MessagingMessageID(id))
	}
	s.t.inject(s.ctx, h)
}

// Header is h with the trace context written in, in a copy.
func (s *sendSpan) Header(h nats.Header) nats.Header { return s.t.injected(s.ctx, h) }

// End ends the span, with err, if not nil, as its status and error.type.
func (s *sendSpan) End(err error) { end(s.span, err) }

// propagates reports whether ctx has what the propagators write: a valid
// span context, or baggage.
func propagates(ctx context.Context) bool {
	return trace.SpanContextFromContext(ctx).IsValid() || baggage.FromContext(ctx).Len() > 0
}

// inject writes the trace context of ctx (and its baggage) into h, over
// any h had, when ctx has any: h belongs to the message being sent, never
// to the caller.
func (t *Tracer) inject(ctx context.Context, h nats.Header) {
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
func (t *Tracer) injected(ctx context.Context, h nats.Header) nats.Header {
	if !propagates(ctx) {
		return h
	}
	out := make(nats.Header, len(h)+len(t.fields))
	maps.Copy(out, h)
	t.inject(ctx, out)
	return out
}

// end ends span, with err, if not nil, as its status and error.type.
func end(span trace.Span, err error) {
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
