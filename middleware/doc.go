// Package middleware is the [consumer.Middleware] applications always
// write: [Log], which logs each message handled with its subject and
// stream sequence, and [Dedup], which records the messages a handler has
// handled in a key-value bucket and skips them when they come again. The
// README's "Typed handlers and middleware" section shows them in use.
//
// # Overview
//
// A middleware is declared for every handler of a corral.Client with
// Client.Use (consumer.Group.Use), or for one handler in its
// consumer.Config.Middleware. The group's middleware runs outside the
// handler's own, and all of it inside the handler's timeout and panic
// recovery: a middleware's ctx ends with the handler's Timeout, and a
// panic in it is recovered like one in the handler.
//
// # Lifecycle
//
// A middleware starts nothing: it runs in the handler's workers, for each
// message. [Dedup]'s bucket is declared on first use, as a kv.Bucket is.
//
// # Configuration
//
// [DedupConfig] chooses the key a message is recorded under and bounds
// the record; its zero value means the defaults. How long a record is
// kept is the bucket's TTL (kv.Config.TTL).
//
// # Errors
//
// What a middleware returns settles the message as the handler's result
// would. [Dedup] fails a message whose lookup or record fails, so that it
// is retried; it never reports handled a message it has not recorded.
//
// # Concurrency
//
// The middleware here are safe for concurrent use by every worker of
// every handler they wrap.
package middleware
