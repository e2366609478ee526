// Package stream declares the JetStream streams a Corral application
// depends on: a JetStream handler's stream (consumer.JetStream.CreateStream)
// and the streams the publisher sends to (publisher.Config.Streams).
//
// A [Config] is created, or updated to match, by [Config.Declare]; a change
// the server cannot make in place (storage, retention) is an error that
// names the stream, never a silent change. See the README's "JetStream
// handlers" and "Publishing" sections.
package stream
