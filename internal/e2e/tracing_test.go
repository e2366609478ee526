package e2e_test

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/baggage"
	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/corral-go/corral"
	"github.com/corral-go/corral/consumer"
	"github.com/corral-go/corral/corraltest"
	"github.com/corral-go/corral/internal/natstest"
	"github.com/corral-go/corral/publisher"
	"github.com/corral-go/corral/stream"
	"github.com/corral-go/corral/tasks"
	"github.com/corral-go/corral/tracing"
)

// newTracer returns an SDK tracer provider that exports every span, as it
// ends, to the in-memory exporter it also returns.
func newTracer(t *testing.T) (*sdktrace.TracerProvider, *tracetest.InMemoryExporter) {
	t.Helper()
	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	t.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
	return tp, exp
}

// endedSpan waits for the span named name to have ended and returns it.
func endedSpan(t *testing.T, exp *tracetest.InMemoryExporter, name string) tracetest.SpanStub {
	t.Helper()
	var found tracetest.SpanStub
	natstest.Eventually(t, 20*time.Second, func() bool {
		for _, s := range exp.GetSpans() {
			if s.Name == name {
				found = s
				return true
			}
		}
		return false
	}, func() string { return fmt.Sprintf("no span %q among %v", name, spanNames(exp)) })
	return found
}

func spanNames(exp *tracetest.InMemoryExporter) []string {
	var names []string
	for _, s := range exp.GetSpans() {
		names = append(names, s.Name)
	}
	return names
}

// attr is the value of s's attribute key; its Type is INVALID when s has
// none.
func attr(s tracetest.SpanStub, key string) attribute.Value {
	for _, kv := range s.Attributes {
		if string(kv.Key) == key {
			return kv.Value
		}
	}
	return attribute.Value{}
}

// checkChild checks that child is a span of kind kind, a child of parent
// in parent's trace, linked to parent when linked is true.
func checkChild(t *testing.T, child, parent tracetest.SpanStub, kind trace.SpanKind, linked bool) {
	t.Helper()
	if child.SpanKind != kind {
		t.Errorf("span %q: kind %v, want %v", child.Name, child.SpanKind, kind)
	}
	if got, want := child.SpanContext.TraceID(), parent.SpanContext.TraceID(); got != want {
		t.Errorf("span %q: trace %v, want %v, that of %q", child.Name, got, want, parent.Name)
	}
	if got, want := child.Parent.SpanID(), parent.SpanContext.SpanID(); got != want {
		t.Errorf("span %q: parent %v, want %v, %q", child.Name, got, want, parent.Name)
	}
	if !linked {
		return
	}
	// The link is to the context as the message carried it: remote.
	if len(child.Links) != 1 || !child.Links[0].SpanContext.Equal(parent.SpanContext.WithRemote(true)) {
		t.Errorf("span %q: links %+v, want one to %q", child.Name, child.Links, parent.Name)
	}
}

// checkAttrs checks s's attributes against want, formatted with %v.
func checkAttrs(t *testing.T, s tracetest.SpanStub, want map[string]string) {
	t.Helper()
	for key, v := range want {
		if got := attr(s, key).Emit(); got != v {
			t.Errorf("span %q: %s = %q, want %q", s.Name, key, got, v)
		}
	}
}

// A trace crosses a JetStream publish, the handler that receives it, a
// request the handler makes with its ctx, and the request handler that
// answers: one trace id, each span a child of the one before, each
// receiving span linked to its sender's, and the baggage goes along.
func TestTraceCrossesPublishHandlerAndRequest(t *testing.T) {
	t.Parallel()
	tp, exp := newTracer(t)
	cfg := corral.Config{Name: "test"}
	cfg.Streams = map[string]stream.Config{"ORDERS": {Subjects: []string{"orders.>"}}}
	k := corraltest.New(t, cfg, corral.WithTracer(tracing.New(tp)))
	c := k.Client
	tenants := make(chan string, 2)
	err := c.Handle("fulfil", consumer.Config{Subject: "orders.new", JetStream: consumer.JetStream{Stream: "ORDERS"}},
		consumer.HandlerFunc(func(ctx context.Context, m *consumer.Msg) error {
			tenants <- baggage.FromContext(ctx).Member("tenant").Value()
			_, err := c.Request(ctx, "svc.price", m.Data())
			return err
		}))
	if err != nil {
		t.Fatal(err)
	}
	err = c.HandleRequest("price", consumer.Config{Subject: "svc.price"},
		consumer.RequestFunc(func(ctx context.Context, m *consumer.Msg) (consumer.Reply, error) {
			tenants <- baggage.FromContext(ctx).Member("tenant").Value()
			return consumer.Reply{Data: []byte("42")}, nil
		}))
	if err != nil {
		t.Fatal(err)
	}
	ctx := start(t, k)
	member, err := baggage.NewMember("tenant", "acme")
	if err != nil {
		t.Fatal(err)
	}
	bag, err := baggage.New(member)
	if err != nil {
		t.Fatal(err)
	}
	ctx, root := tp.Tracer("test").Start(baggage.ContextWithBaggage(ctx, bag), "checkout")
	if _, err := c.PublishSync(ctx, "orders.new", []byte("order-1")); err != nil {
		t.Fatal(err)
	}
	root.End()
	for range 2 {
		select {
		case got := <-tenants:
			if got != "acme" {
				t.Errorf("a handler's baggage has tenant %q, want acme", got)
			}
		case <-ctx.Done():
			t.Fatal(ctx.Err())
		}
	}

	checkout := endedSpan(t, exp, "checkout")
	send := endedSpan(t, exp, "send orders.new")
	process := endedSpan(t, exp, "process fulfil")
	request := endedSpan(t, exp, "request svc.price")
	answer := endedSpan(t, exp, "process price")
	checkChild(t, send, checkout, trace.SpanKindProducer, false)
	checkChild(t, process, send, trace.SpanKindConsumer, true)
	checkChild(t, request, process, trace.SpanKindClient, false)
	checkChild(t, answer, request, trace.SpanKindServer, true)

	checkAttrs(t, send, map[string]string{
		"messaging.system": "nats", "messaging.operation.type": "send", "messaging.operation.name": "send",
		"messaging.destination.name": "orders.new", "messaging.message.body.size": "7",
	})
	checkAttrs(t, process, map[string]string{
		"messaging.system": "nats", "messaging.operation.type": "process", "messaging.operation.name": "process",
		"messaging.destination.name": "orders.new", "messaging.destination.subscription.name": "fulfil",
		"messaging.consumer.group.name": "fulfil", "nats.jetstream.stream": "ORDERS",
		"nats.jetstream.delivery_count": "1", "nats.jetstream.sequence.stream": "1",
		"messaging.message.body.size": "7",
	})
	// The publisher's Nats-Msg-Id names the message on both sides.
	if id := attr(send, "messaging.message.id").AsString(); id == "" || attr(process, "messaging.message.id").AsString() != id {
		t.Errorf("messaging.message.id: sent %q, processed %q", id, attr(process, "messaging.message.id").AsString())
	}
	checkAttrs(t, request, map[string]string{
		"messaging.system": "nats", "messaging.operation.type": "send", "messaging.operation.name": "request",
		"messaging.destination.name": "svc.price",
	})
	checkAttrs(t, answer, map[string]string{
		"messaging.system": "nats", "messaging.operation.type": "process",
		"messaging.destination.name": "svc.price", "messaging.destination.subscription.name": "price",
	})
	for _, s := range []tracetest.SpanStub{send, process, request, answer} {
		if s.Status.Code != codes.Unset {
			t.Errorf("span %q: status %+v, want unset", s.Name, s.Status)
		}
		if s.InstrumentationScope.Name != "github.com/corral-go/corral" {
			t.Errorf("span %q: instrumentation scope %q", s.Name, s.InstrumentationScope.Name)
		}
	}
}

// Without WithTracer the Client writes no trace context, even
// when the caller's ctx holds a span: a JetStream publish, a core publish
// and a request all arrive without a traceparent header.
func TestNoTraceHeadersWithoutTracer(t *testing.T) {
	t.Parallel()
	tp, exp := newTracer(t)
	cfg := corral.Config{Name: "test"}
	cfg.Streams = map[string]stream.Config{"EVENTS": {Subjects: []string{"events.>"}}}
	k := corraltest.New(t, cfg)
	c := k.Client
	headers := make(chan nats.Header, 1)
	err := c.HandleRequest("echo", consumer.Config{Subject: "svc.echo"},
		consumer.RequestFunc(func(_ context.Context, m *consumer.Msg) (consumer.Reply, error) {
			headers <- m.Header()
			return consumer.Reply{}, nil
		}))
	if err != nil {
		t.Fatal(err)
	}
	ctx := start(t, k)
	ctx, span := tp.Tracer("test").Start(ctx, "caller")
	defer span.End()
	nc, err := c.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	sub, err := nc.SubscribeSync("plain.core")
	if err != nil {
		t.Fatal(err)
	}
	if err := c.PublishCore(ctx, "plain.core", []byte("x")); err != nil {
		t.Fatal(err)
	}
	core, err := sub.NextMsgWithContext(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Request(ctx, "svc.echo", []byte("x")); err != nil {
		t.Fatal(err)
	}
	if _, err := c.PublishSync(ctx, "events.x", []byte("x")); err != nil {
		t.Fatal(err)
	}
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	s, err := js.Stream(ctx, "EVENTS")
	if err != nil {
		t.Fatal(err)
	}
	stored, err := s.GetMsg(ctx, 1)
	if err != nil {
		t.Fatal(err)
	}
	for what, h := range map[string]nats.Header{"core message": core.Header, "request": <-headers, "stream message": stored.Header} {
		for k := range h {
			if k := strings.ToLower(k); k == "traceparent" || k == "tracestate" || k == "baggage" {
				t.Errorf("%s: header %q, want no trace context: %v", what, k, h)
			}
		}
	}
	if names := spanNames(exp); len(names) != 0 {
		t.Errorf("spans %v, want none", names)
	}
}

// A handler's error, or its panic, marks its span Error; a request
// handler's 4xx service error does not (the caller's fault, not the
// handler's), but the caller's request span is Error either way. A traced
// core publish sends its own trace context in place of one the message
// had, and leaves the caller's message and its headers as they were.
func TestTracedErrorsMarkSpans(t *testing.T) {
	t.Parallel()
	tp, exp := newTracer(t)
	k := corraltest.New(t, corral.Config{Name: "test"}, corral.WithTracer(tracing.New(tp)))
	c := k.Client
	received := make(chan nats.Header, 1)
	err := c.Handle("broken", consumer.Config{Subject: "jobs.broken"},
		consumer.HandlerFunc(func(_ context.Context, m *consumer.Msg) error {
			received <- m.Header()
			return errors.New("boom")
		}))
	if err != nil {
		t.Fatal(err)
	}
	err = c.Handle("panicky", consumer.Config{Subject: "jobs.panicky"},
		consumer.HandlerFunc(func(context.Context, *consumer.Msg) error { panic("oops") }))
	if err != nil {
		t.Fatal(err)
	}
	err = c.HandleRequest("strict", consumer.Config{Subject: "svc.strict"},
		consumer.RequestFunc(func(_ context.Context, m *consumer.Msg) (consumer.Reply, error) {
			if string(m.Data()) == "bad" {
				return consumer.Reply{}, consumer.Errorf(400, "bad input")
			}
			return consumer.Reply{}, errors.New("broken")
		}))
	if err != nil {
		t.Fatal(err)
	}
	ctx := start(t, k)

	stale := "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01" // another trace's
	msg := &nats.Msg{Subject: "jobs.broken", Data: []byte("x"), Header: nats.Header{"Job": {"7"}, "traceparent": {stale}}}
	before := maps.Clone(msg.Header)
	if err := c.PublishCoreMsg(ctx, msg); err != nil {
		t.Fatal(err)
	}
	if !maps.EqualFunc(msg.Header, before, func(a, b []string) bool { return strings.Join(a, ",") == strings.Join(b, ",") }) {
		t.Errorf("the caller's headers became %v, were %v", msg.Header, before)
	}
	got := <-received
	if got.Get("Job") != "7" || got.Get("traceparent") == "" || got.Get("traceparent") == stale {
		t.Errorf("received headers %v, want Job and a traceparent of the send span", got)
	}
	broken := endedSpan(t, exp, "process broken")
	if broken.Status.Code != codes.Error || broken.Status.Description != "boom" || attr(broken, "error.type").AsString() == "" {
		t.Errorf("span of a failed handler: status %+v, error.type %q", broken.Status, attr(broken, "error.type").AsString())
	}
	checkChild(t, broken, endedSpan(t, exp, "send jobs.broken"), trace.SpanKindConsumer, true)

	if err := c.PublishCore(ctx, "jobs.panicky", nil); err != nil {
		t.Fatal(err)
	}
	if s := endedSpan(t, exp, "process panicky"); s.Status.Code != codes.Error || s.Status.Description != "panic" {
		t.Errorf("span of a handler that panicked: status %+v", s.Status)
	}

	for _, tc := range []struct {
		data       string
		handlerErr bool
	}{{"bad", false}, {"boom", true}} {
		exp.Reset()
		_, err := c.Request(ctx, "svc.strict", []byte(tc.data))
		var se *consumer.ServiceError
		if !errors.As(err, &se) {
			t.Fatalf("request %q: %v, want a service error", tc.data, err)
		}
		req := endedSpan(t, exp, "request svc.strict")
		if req.Status.Code != codes.Error {
			t.Errorf("request %q: the caller's span has status %+v, want Error", tc.data, req.Status)
		}
		answer := endedSpan(t, exp, "process strict")
		if got := answer.Status.Code == codes.Error; got != tc.handlerErr {
			t.Errorf("request %q: the handler's span has status %+v, want Error: %v", tc.data, answer.Status, tc.handlerErr)
		}
	}
}

// A task runs in a span that continues the trace of its Enqueue.
func TestTracedTask(t *testing.T) {
	t.Parallel()
	tp, exp := newTracer(t)
	cfg := corral.Config{Name: "test"}
	parsed, err := corral.ParseConfig([]byte(`
tasks:
  render: {heartbeat: 300ms, lease_ttl: 1s, claim_wait: 1s, keep_completed: 1m}
`))
	if err != nil {
		t.Fatal(err)
	}
	cfg.Tasks = parsed.Tasks
	k := corraltest.New(t, cfg, corral.WithTracer(tracing.New(tp)))
	c := k.Client
	if err := c.HandleTasks("render", tasks.Config{}, tasks.HandlerFunc(func(context.Context, *tasks.Task) error { return nil })); err != nil {
		t.Fatal(err)
	}
	ctx := start(t, k)
	f, err := c.Enqueue(ctx, "render", []byte("page"), publisher.WithMsgID("job-1"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Wait(ctx); err != nil {
		t.Fatal(err)
	}
	enqueue := endedSpan(t, exp, "enqueue render")
	run := endedSpan(t, exp, "process render")
	checkChild(t, run, enqueue, trace.SpanKindConsumer, true)
	checkAttrs(t, enqueue, map[string]string{
		"messaging.operation.name": "enqueue", "messaging.destination.name": "corral.tasks.render", "messaging.message.id": "job-1",
	})
	checkAttrs(t, run, map[string]string{
		"messaging.operation.type": "process", "messaging.destination.name": "corral.tasks.render",
		"messaging.destination.subscription.name": "render", "corral.task.attempt": "0",
	})
}
