// Package stream declares the JetStream streams a Corral application
// depends on. See the README's "JetStream handlers" and "Publishing"
// sections.
//
// # Overview
//
// A [Config] describes a stream: a JetStream handler's
// (consumer.JetStream.CreateStream), one the publisher sends to
// (publisher.Config.Streams), or a task queue's.
//
// # Lifecycle
//
// [Config.Declare] creates the stream, or updates it to match, each time
// its owner connects.
//
// # Configuration
//
// Config carries yaml tags; every field but Subjects has a default.
//
// # Errors
//
// Validate reports every problem at once; a change the server cannot make
// in place (storage, retention) is an error of Declare that names the
// stream, never a silent change. A stream that asks for message schedules
// from a server that does not keep them (older than 2.12) is an error of
// Declare wrapping [ErrSchedulesUnsupported].
//
// # Concurrency
//
// A Config is a value; Declare may be called concurrently.
package stream
