// Package corral is a framework for Go applications built on NATS. An
// application declares one Client; the Client runs a supervision tree
// (github.com/thejerf/suture/v4) that keeps a NATS connection alive, and
// is the one interface the rest of the application calls.
//
// # Overview
//
//	corral.Client            root of the tree; itself a suture.Service
//	├── server               the embedded nats-server, when no server is configured
//	└── connection           owns the *nats.Conn; reports and replaces it
//
// With no servers configured the Client starts an in-process nats-server
// with JetStream (store under ./corral-data by default) and connects to
// it; pointing connection.servers at a real server or cluster needs no
// code change.
//
// # Lifecycle
//
// New validates the configuration and builds the tree; nothing connects
// until Run (or Serve, when the Client is a child of an application's own
// suture tree). When the context ends, children stop in reverse order of
// their start, each within its shutdown timeout: dependents first, then
// the connection (drained), then the embedded server.
//
// # Configuration
//
// Config holds every section. LoadConfig reads YAML (unknown keys are
// errors, durations read like "2s", sizes like "64MiB") and then
// CORRAL_* environment variables, which win: CORRAL_CONNECTION_SERVERS
// overrides connection.servers. Every child has a restart policy
// (supervisor.Policy): permanent, transient or temporary, failure
// threshold and decay, restart delay and backoff with jitter, shutdown
// timeout; the top-level restart section is inherited by every child.
//
// # Errors
//
// Configuration errors wrap ErrInvalidConfig and list every problem with
// its field (ValidationError). Run returns nil after a clean stop and an
// error wrapping ErrShutdownIncomplete when a child did not stop in time.
//
// # Concurrency
//
// A Client is safe for concurrent use. Events reach the hook given to
// WithEventHook synchronously, from the goroutine that saw them; the hook
// must not block. Credentials never appear in logs, events or errors.
package corral
