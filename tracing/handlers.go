package tracing

import (
	"context"
	"errors"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"
	"go.opentelemetry.io/otel/trace"

	"github.com/corral-go/corral/consumer"
	"github.com/corral-go/corral/tasks"
)

// Span attributes of NATS and Corral that the semantic conventions do not
// name.
const (
	attrStream         = attribute.Key("nats.jetstream.stream")
	attrStreamSeq      = attribute.Key("nats.jetstream.sequence.stream")
	attrDeliveryCount  = attribute.Key("nats.jetstream.delivery_count")
	attrTaskAttempt    = attribute.Key("corral.task.attempt")
	attrTaskHandedBack = attribute.Key("corral.task.handed_back")
)

// Handler runs the rest of a handler's chain, the handler included, in
// a "process <handler>" span: a child of the span that sent the message,
// from the trace context in its headers, and linked to it; a new trace
// when the message carries none. The handler's ctx holds the span, so
// what the handler sends with it continues the trace. The span is of kind
// Server for a core message that expects a reply (a request), Consumer
// otherwise. An error the handler returns sets its status to Error, but
// for a 4xx service error answered to a request: the request's fault, as
// Corral counts it, not the handler's.
func (t *Tracer) Handler(next consumer.Handler) consumer.Handler {
	return consumer.HandlerFunc(func(ctx context.Context, m *consumer.Msg) error {
		md := m.Metadata()
		request := md == nil && m.Reply() != ""
		kind := consumerKind
		if request {
			kind = serverKind
		}
		kvs := make([]attribute.KeyValue, 0, 6)
		kvs = append(kvs, natsSystem,
			semconv.MessagingOperationTypeProcess,
			semconv.MessagingOperationName("process"),
			semconv.MessagingDestinationName(m.Subject()),
			semconv.MessagingDestinationSubscriptionName(m.Handler()))
		if md != nil {
			kvs = append(kvs, semconv.MessagingConsumerGroupName(md.Consumer))
		}
		ctx, span := t.startProcess(ctx, m.Header(), "process "+m.Handler(), kind, kvs)
		if span.IsRecording() {
			span.SetAttributes(semconv.MessagingMessageBodySize(len(m.Data())))
			if id := m.Header().Get(jetstream.MsgIDHeader); id != "" {
				span.SetAttributes(semconv.MessagingMessageID(id))
			}
			if md != nil {
				span.SetAttributes(attrStream.String(md.Stream),
					attrStreamSeq.Int64(int64(md.Sequence.Stream)),
					attrDeliveryCount.Int64(int64(md.NumDelivered)))
			}
		}
		return t.finish(span, func() error { return next.Handle(ctx, m) },
			func(err error) bool { return !(request && clientError(err)) })
	})
}

// finish runs call in span and ends the span: with call's error as its
// status when failed says the error is a failure, with "panic" when call
// panics (the panic goes on, to the handler's recovery).
func (t *Tracer) finish(span trace.Span, call func() error, failed func(error) bool) error {
	returned := false
	defer func() {
		if !returned {
			span.SetStatus(codes.Error, "panic")
			span.End()
		}
	}()
	err := call()
	returned = true
	if err != nil && !failed(err) {
		span.End()
		return err
	}
	end(span, err)
	return err
}

// startProcess starts a span named name for a message received with
// headers h, with the attributes kvs a sampler may look at, as Handler
// describes it.
func (t *Tracer) startProcess(ctx context.Context, h nats.Header, name string, kind trace.SpanStartOption, kvs []attribute.KeyValue) (context.Context, trace.Span) {
	parent := t.prop.Extract(ctx, headerCarrier(h))
	if sc := trace.SpanContextFromContext(parent); sc.IsValid() && sc.IsRemote() {
		return t.tracer.Start(parent, name, kind, trace.WithAttributes(kvs...), trace.WithLinks(trace.Link{SpanContext: sc}))
	}
	// Not a child of whatever span the handler's ctx inherited from Run's.
	return t.tracer.Start(parent, name, kind, trace.WithAttributes(kvs...), newRoot)
}

// clientError reports whether err is a 4xx service error.
func clientError(err error) bool {
	var se *consumer.ServiceError
	return errors.As(err, &se) && se.Code >= 400 && se.Code < 500
}

// Tasks returns h running each task in a "process <queue>" span of kind
// Consumer, a child of the span that enqueued it and linked to it, as
// Handler does for handlers; cfg is the queue's configuration. A task
// handed back (tasks.HandBack) is no error: its span says handed_back. A
// nil h is returned as it is, for tasks.New to refuse.
func (t *Tracer) Tasks(queue string, cfg tasks.Config, h tasks.Handler) tasks.Handler {
	if f, ok := h.(tasks.HandlerFunc); h == nil || ok && f == nil {
		return h
	}
	stream, sc := cfg.QueueStream(queue)
	subject := sc.Subjects[0]
	return tasks.HandlerFunc(func(ctx context.Context, task *tasks.Task) error {
		ctx, span := t.startProcess(ctx, task.Header(), "process "+queue, consumerKind, []attribute.KeyValue{
			natsSystem,
			semconv.MessagingOperationTypeProcess,
			semconv.MessagingOperationName("process"),
			semconv.MessagingDestinationName(subject),
			semconv.MessagingDestinationSubscriptionName(queue),
		})
		if span.IsRecording() {
			span.SetAttributes(semconv.MessagingMessageBodySize(len(task.Data())),
				semconv.MessagingMessageID(task.ID()),
				attrStream.String(stream),
				attrTaskAttempt.Int(task.Attempt()))
		}
		return t.finish(span, func() error { return h.Run(ctx, task) }, func(err error) bool {
			if hb := (*tasks.HandBackError)(nil); errors.As(err, &hb) {
				span.SetAttributes(attrTaskHandedBack.Bool(true))
				return false // not a failure
			}
			return true
		})
	})
}
