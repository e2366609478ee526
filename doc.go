// Package corral is a framework for Go applications built on NATS. An
// application declares one [Client]; the Client runs a supervision tree
// (github.com/thejerf/suture/v4) that keeps a NATS connection alive, runs
// the application's handlers on bounded worker pools, buffers and confirms
// what it publishes, and gives it JetStream key-value buckets and object
// stores. The README is the guide; this is the reference.
//
// # Overview
//
//	corral.Client          the root of the tree; itself a suture.Service
//	├── ops                the ops listener, when ops.listen is set (package ops; stops last)
//	├── server             the embedded nats-server (package embedded), when no server is configured
//	├── connection         connection.Supervisor: owns the *nats.Conn, replaces it when it closes for good
//	├── publisher          publisher.Buffered: bounded buffer -> JetStream publish -> acks
//	├── consumers          consumer.Group: one child per handler
//	│   └── <handler>      subscription or pull consumer -> bounded queue -> workers
//	├── tasks              this process's worker of each long-running task queue
//	│   └── tasks/<queue>  claims tasks, runs them, one lease keeps them all alive
//	└── watchers           supervised KV and object-store watches
//	    └── <watch>
//
// Handlers and watches are declared in code and bound to configuration by
// name ([Client.Handle], [Client.HandleRequest], [Client.HandleTasks],
// [Client.AddWatch]); buckets, object stores, locks and task queues are
// declared in the configuration and opened by name ([Client.KV],
// [Client.ObjectStore], [Client.Lock], [Client.Enqueue]). Every child has
// its own restart policy.
//
// What only some applications need lives in packages that wrap a Client,
// so that only they link it: package embedded runs nats-server in
// process ([WithEmbeddedServer]), package ops serves health, readiness,
// Prometheus metrics and a status page ([WithOps]), package tracing
// traces with OpenTelemetry ([WithTracer]). A program that imports only
// this package and connects to configured servers links none of them.
//
// # Lifecycle
//
// [New] validates the configuration and builds the tree; nothing connects
// until [Client.Run] (or Serve, when the Client is a child of an
// application's own suture tree). [Client.Ready] waits until everything
// declared is connected, subscribed, leased and watching, without polling;
// a test or a main that must not publish into the void waits for it. When
// the context ends, children stop in
// reverse order of their start, each within its shutdown timeout: handlers
// and watches first, then the publisher (flushed), the connection
// (drained), and the embedded server last.
//
// # Configuration
//
// [Config] holds every section. [LoadConfig] reads YAML (unknown keys are
// errors, durations read like "2s", sizes like "64MiB") and then CORRAL_*
// environment variables, which win. Handler settings declared in code are
// overridden by every key the file or the environment writes for that
// handler, false and zero included.
//
// # Errors
//
// Configuration errors wrap [ErrInvalidConfig] and list every problem
// with its field ([ValidationError]); New also refuses a configuration
// with no servers and no embedded server, and ops.listen without WithOps. A handler in the configuration that
// code never bound fails Run before any child starts, with
// [ErrUnboundHandler] naming each. Run returns nil after a clean stop and
// an error wrapping [ErrShutdownIncomplete] when a child did not stop in
// time. Ready fails with [ErrNotReady], naming what is not ready yet. Each
// error names its package once, at its start.
//
// # Concurrency
//
// A Client is safe for concurrent use. Events reach the hook given to
// [WithEventHook] synchronously, from the goroutine that saw them; the
// hook must not block. Credentials never appear in logs, events or errors.
package corral
