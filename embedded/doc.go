// Package embedded runs nats-server with JetStream inside the process, so
// that a Corral application works on a machine with nothing but Go. The
// README's "The embedded server" section says when to use it and when not.
//
// # Overview
//
// A [Server] listens on 127.0.0.1 and a random port that it keeps across
// restarts, and stores JetStream data under corral.ServerConfig's
// StoreDir. A Client runs one when no server URL is configured and the
// application chose it with corral.WithEmbeddedServer(embedded.New), and
// connects to it; pointing connection.servers at a real server or
// cluster needs no code change. Only a program that imports this package
// links nats-server.
//
// # Lifecycle
//
// A Server is a suture service: Serve starts nats-server, waits until it
// accepts connections ([Ready]), and shuts it down when its context ends
// ([Stopped]). [Server.ClientURL] waits until it accepts connections.
//
// # Configuration
//
// corral.ServerConfig, the server section of corral.Config, carries yaml
// tags; its zero value is valid.
//
// # Errors
//
// Invalid configuration wraps corral.ErrInvalidConfig. Serve returns
// [ErrNotReady] when the server does not accept connections within its
// start timeout, and [ErrStopped] when it shuts down by itself.
//
// # Concurrency
//
// A Server's methods are safe for concurrent use.
package embedded
