// Package connection supervises the application's NATS connection and
// runs the embedded nats-server.
//
// # Overview
//
// Supervisor owns one *nats.Conn at a time. nats.go reconnects across
// ordinary outages by itself; the supervisor turns every state change
// (connected, disconnected, reconnected, closed, discovered servers, lame
// duck, slow consumer, async error) into an event and a log line, with
// credentials redacted from URLs. When the connection closes for good
// (reconnects exhausted, authorization refused), Serve returns an error so
// that the tree restarts it, which makes a new connection. Dependents call
// Conn, which waits until the connection is up and returns a channel that
// is closed when that connection is gone for good; they then call Conn
// again for its replacement. Errors nats.go reports only to the async
// error handler, such as a publish refused for permissions, reach
// dependents through OnAsyncError (slow consumers through
// ClaimSlowConsumer).
//
// Server runs nats-server in process with JetStream, on 127.0.0.1 and a
// random port that is kept across restarts, for applications that
// configure no server.
//
// # Lifecycle
//
// Both are suture services. Serve of the Supervisor connects (waiting for
// the embedded server if there is one) and, when its context ends, drains
// the connection within DrainTimeout before it returns.
//
// # Configuration
//
// Config's zero value is valid. Defaults are chosen so that failures are
// noticed in seconds: a ping every 5s with 2 outstanding (a half-open TCP
// connection is detected within 15s, not nats.go's 4 to 6 minutes),
// reconnect waits from 250ms doubling to 4s plus up to 250ms of jitter,
// never giving up, retrying when no server is up at start, an 8MiB
// reconnect buffer and a 10s drain.
//
// # Errors
//
// Invalid configuration wraps ErrInvalidConfig and names each field; files
// for TLS and credentials are checked at validation. Serve's errors wrap
// ErrClosed and nats.go's errors, matchable with errors.Is.
//
// # Concurrency
//
// All methods are safe for concurrent use. Events are emitted from
// nats.go's callback goroutine; hooks must not block it.
package connection
