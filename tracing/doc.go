// Package tracing traces a Corral Client with OpenTelemetry: the messages
// it sends and the handlers, request handlers and task workers it runs,
// following the messaging semantic conventions. It wraps a corral.Client
// through corral.WithTracer; only a program that imports it links the
// OpenTelemetry API, and the application brings its SDK:
//
//	client, err := corral.New(cfg, corral.WithTracer(tracing.New(tp)))
//
// # Overview
//
// A [Tracer] starts a span for every message the Client sends and writes
// its W3C trace context (and baggage) in the message's headers, in the
// Client's copy; a handler's span continues the sender's trace. The
// Tracer uses the provider it was given and its own propagators, never
// the global ones.
//
// # Concurrency
//
// A Tracer is safe for concurrent use.
package tracing
