// Package connection keeps the application's NATS connection alive and
// defines [Source], the one contract between the connection and
// everything that uses it. The README's "The connection" section lists the
// defaults and why they were chosen.
//
// # Overview
//
// A [Supervisor] owns one *nats.Conn at a time. nats.go reconnects across
// ordinary outages by itself; the supervisor turns every state change
// (connected, disconnected, reconnected, closed, discovered servers, lame
// duck, slow consumer, async error) into an event, with credentials
// redacted from URLs ([Redact]); its [Status] shows URLs with none of
// their userinfo. When the connection closes for good
// (reconnects exhausted, authorization refused, or any drop with
// Config.Reconnect off), Serve returns an error so that its tree restarts
// it, which makes a new connection; the servers the cluster announced are
// kept and dialled by it after the configured ones.
//
// Handlers, the publisher, buckets, stores and watches take a [Source]:
// Conn returns the live connection and a channel closed when it is gone
// for good, Observe reports status changes, OnAsyncError and
// ClaimSlowConsumer hand them the errors nats.go reports only
// asynchronously. [Fixed] is a Source for a connection the application
// manages itself. [JetStreamAPI] says which JetStream they reach on it:
// the account's own, another domain's across a leaf node, or one another
// account exports.
//
// # Lifecycle
//
// A Supervisor is a suture service: Serve connects (waiting for the
// embedded server when [Config].Embedded is set) and, when its context
// ends, drains the connection within DrainTimeout before it returns.
//
// # Configuration
//
// [Config] carries yaml tags and its zero value is valid; every field's
// comment states its default. Files named by TLS and Auth are checked by
// Validate.
//
// # Errors
//
// Invalid configuration wraps [supervisor.ErrInvalidConfig] and names each field.
// Serve's errors wrap [ErrClosed] and nats.go's errors.
//
// # Concurrency
//
// All methods are safe for concurrent use. Events are emitted from
// nats.go's callback goroutine; hooks must not block it.
package connection
