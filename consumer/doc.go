// Package consumer runs message handlers on bounded worker pools under a
// supervision tree, and detects slow consumers by their full queues.
//
// # Overview
//
// A handler is declared with a name, a Config and a Handler (or a
// RequestHandler for request/reply endpoints), in the http.Handler style:
//
//	sup.Handle("orders", consumer.Config{Subject: "orders.>", Workers: 8},
//		consumer.HandlerFunc(func(ctx context.Context, m *consumer.Msg) error {
//			return process(ctx, m.Data())
//		}))
//
// Each handler is a subscription feeding a bounded task queue that a fixed
// number of workers drain:
//
//	subscription -> queue (QueueSize) -> Workers goroutines -> handler
//
// The queue being full is how a slow consumer is detected. What happens
// then is the handler's Overflow policy: block (backpressure into the
// subscription's pending buffer in nats.go, bounded by PendingMsgs and
// PendingBytes), drop_newest, drop_oldest, or for request handlers reject,
// which answers 503 at once so callers fail fast. Every drop is counted. An
// episode of overload emits one SlowConsumerStarted event when the queue
// first fills and one SlowConsumerEnded, with what it dropped, once the
// queue has stayed below half for a second: never one per message.
//
// A panic in a handler is recovered for that message (a
// *supervisor.PanicError with the stack), counted as a failure, and the
// pool carries on; HandlerPanicked events are limited to one a second. A
// per-message Timeout cancels the handler's ctx; a request that times out
// is answered 504.
//
// Request handlers answer with a Reply, or with an error that is sent in
// the Nats-Service-Error and Nats-Service-Error-Code headers, as nats.go's
// micro package does, so any NATS client can tell success from failure.
//
// # JetStream handlers
//
// A handler whose Config sets JetStream.Stream consumes a durable pull
// consumer instead, at least once. Pull requests ask for exactly the room
// free in the pool, so no message waits in a prefetch buffer while its ack
// wait runs and nothing is dropped. The handler's result settles each
// message: nil acks, an error naks with the Backoff delay for its delivery
// count, Terminal(err) terminates, and on the last delivery (MaxDeliver) a
// failing message is copied to DeadLetter and terminated once a stream has
// stored the copy. Messages held (running or queued) for a third of the
// ack wait are kept alive with in-progress acks, sent by half the ack wait
// at the latest. Lost pull requests, a deleted consumer or stream, a
// leader change are reported (ConsumeError) and recovered from; at stop,
// messages that did not start, and those whose handler returns
// context.Canceled once the grace period has run out, are naked for
// redelivery at once (never dead-lettered for it).
//
// # Lifecycle
//
// Supervisor is a suture.Service. Each handler is its own child with its
// own restart policy: a handler that keeps failing (its subscription is
// refused, say) is restarted with backoff and its siblings are untouched.
// When the connection is replaced, handlers subscribe again on the new one
// by themselves. At shutdown all handlers drain at once: each unsubscribes
// (draining what nats.go holds), lets its workers finish what is queued
// and in flight, and only when its grace period (the shutdown timeout less
// a tenth, at most a second) runs out cancels the handlers' ctx. A Drained
// event reports what was finished and what was abandoned; core NATS has no
// redelivery, so abandoned messages are lost.
//
// # Configuration
//
// Config carries yaml tags; corral.Config.Handlers holds them by name, and
// a field set there overrides the same field declared in code. Defaults:
// 1 worker (messages in order), a queue of 256, block, no timeout, and
// nats.go's pending limits.
//
// # Errors
//
// Handle and HandleRequest validate at once: an invalid subject or queue
// group, a bad policy or a reused name is an error wrapping
// ErrInvalidConfig or ErrDuplicateHandler, naming the field.
//
// # Concurrency
//
// With more than one worker, a handler runs concurrently with itself.
// Status is safe to call at any time.
package consumer
