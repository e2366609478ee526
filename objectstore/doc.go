// Package objectstore is JetStream object stores that follow the
// connection, stream objects in constant memory, and verify what they
// read. See the README's "Object stores" and "Watches" sections for what
// each guarantees.
//
// # Overview
//
// [Open] returns a [Store]. [Store.Put] stores what an io.Reader yields
// in 128 KiB chunks, at most 8 unacknowledged, and makes the object
// visible only once every chunk is stored; [Store.Get] writes an object
// to an io.Writer, at most 4 chunks ahead, and verifies its size and
// SHA-256 digest. PutBytes, PutFile, GetBytes and GetFile wrap them;
// Info, List, Delete and AddLink complete the store. [Store.Watch]
// returns a [Watch], a suture.Service that delivers every change of the
// store once and in order. The objects are nats.go's format, readable
// and writable by any NATS client.
//
// # Lifecycle
//
// Open contacts nothing: the store is declared (created, or updated to
// match its [Config]; with Bind, looked up) on first use, and again on
// each replacement connection of its [connection.Source]. A call that
// finds the store gone (deleted, or a memory store lost in a server
// restart) fails with [ErrStoreNotFound]; the next call declares it again,
// a second later, and emits [StoreRecreated] when its stream was created
// since it was last declared. A put that fails leaves the
// previous version whole and removes what it stored. A Watch runs while
// it is served and, served again after it returned, resumes after the
// last change it delivered.
//
// # Configuration
//
// [Config] declares a store and [WatchConfig] selects what a watch sees;
// each field's zero value is its default, and Config.Validate reports
// every problem at once.
//
// # Errors
//
// [ErrNotFound] and [ErrDigestMismatch] also match nats.go's
// jetstream.ErrObjectNotFound and jetstream.ErrDigestMismatch with
// errors.Is. A get fails with ErrNotFound when its object is replaced or
// deleted while it reads, and when no chunk comes for 30 s; GetFile then
// leaves no file behind. [ErrStoreNotFound] is a bound store that does not
// exist, or a store that disappeared; [supervisor.ErrInvalidConfig] is every
// configuration problem, including a nil [WatchFunc] and an invalid watch
// name. [ErrInvalidName] is an object name too long for its subject to fit
// the server's control line, refused before any request: sent, it would
// make the server close the connection.
//
// # Concurrency
//
// A Store is safe for concurrent use; puts of one name at once replace one
// another in turn, and no version's chunks are left behind. A Watch calls
// its WatchFunc from one goroutine, one change at a time; serve it once at
// a time. Events go to [Config.Events] synchronously, from the goroutine
// that found the store declared again.
package objectstore
