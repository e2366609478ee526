package tracing_test

import (
	"context"
	"fmt"

	"github.com/nats-io/nats.go"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"

	"github.com/corral-go/corral"
	"github.com/corral-go/corral/tracing"
)

// A Client traced with the application's tracer provider: an SDK's in
// production, here one that records nothing.
func Example() {
	var tp trace.TracerProvider = noop.NewTracerProvider()
	var cfg corral.Config
	cfg.Connection.Servers = []string{"nats://127.0.0.1:4222"}
	client, err := corral.New(cfg, corral.WithTracer(tracing.New(tp)))
	if err != nil {
		fmt.Println(err)
		return
	}
	defer client.Close()
	fmt.Println(client)
	// Output: corral
}

// What a Client does for each message it sends: the message's copy of
// the headers carries the trace context of the ctx it is sent with.
func ExampleTracer_StartSend() {
	parent := trace.ContextWithSpanContext(context.Background(), trace.NewSpanContext(trace.SpanContextConfig{
		TraceID:    trace.TraceID{0x4b, 0xf9, 0x2f, 0x35, 0x77, 0xb3, 0x4d, 0xa6, 0xa3, 0xce, 0x92, 0x9d, 0x0e, 0x0e, 0x47, 0x36},
		SpanID:     trace.SpanID{0x00, 0xf0, 0x67, 0xaa, 0x0b, 0xa9, 0x02, 0xb7},
		TraceFlags: trace.FlagsSampled,
	}))
	t := tracing.New(noop.NewTracerProvider())
	_, span := t.StartSend(parent, corral.Send{Op: "send", Name: "orders.created", Subject: "orders.created", Size: 42})
	caller := nats.Header{"Order": []string{"7"}}
	sent := span.Header(caller)
	span.End(nil)
	fmt.Println(sent.Get("traceparent"))
	fmt.Println(len(caller), len(sent)) // the caller's headers are not changed
	// Output:
	// 00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01
	// 1 2
}
