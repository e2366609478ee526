// Package kv is typed JetStream key-value buckets: a codec per bucket,
// compare-and-set helpers, supervised watches and distributed locks. See
// the README's "Key-value buckets", "Watches" and "Locks and leader
// election" sections for what each guarantees.
//
// # Overview
//
// [Open] returns a [Bucket] whose values a [Codec] encodes ([JSON], [Bytes],
// [String] or your own); [Typed] returns a view of the same bucket with
// another codec. A Bucket has Get, Put, Create, CompareAndSet, Update (a
// read-modify-write retried on conflicts), Delete, Purge, Keys and
// History. [Bucket.Watch] returns a [Watch], a suture.Service that
// delivers every change of the watched keys once and in order. [NewLock]
// returns a [Lock]: one holder at a time, a fencing token per
// acquisition, and a Lost channel closed the moment the holder can no
// longer be sure it holds it.
//
// # Lifecycle
//
// Open contacts nothing: the bucket is declared (created, or updated to
// match its [Config]; with Bind, looked up) on first use, and again on
// each replacement connection of its [connection.Source]. A call that
// finds the bucket gone (deleted, or a memory bucket lost in a server
// restart) fails with [ErrBucketNotFound]; the next call declares it
// again, a second later, and emits [BucketRecreated] when its stream was
// created since it was last declared. A Watch runs while
// it is served and, served again after it returned, resumes after the
// last revision it delivered. A Lease renews itself until Release or
// until it is lost.
//
// # Configuration
//
// [Config] declares a bucket, [WatchConfig] selects what a watch sees and
// [LockConfig] configures a lock; each field's zero value is its default,
// and Validate reports every problem at once. Size History so that it
// outlasts the longest time a watch may fall behind: a revision the
// bucket discarded before the watch read it is skipped (the latest value
// of each key is always kept).
//
// # Errors
//
// [ErrKeyNotFound], [ErrKeyExists], [ErrRevisionMismatch],
// [ErrBucketNotFound] and [ErrValueTooLarge] also match nats.go's
// matching errors with errors.Is. [ErrInvalidKey] is returned before any
// request for a key that [ValidKey] refuses or whose subject is too long
// for the server's control line (which would close the connection),
// [ErrTooManyConflicts] when
// Update gave up, [ErrLockLost] by a Release that came too late, and
// [supervisor.ErrInvalidConfig] for every configuration problem, including a nil
// [WatchFunc], an invalid watch name and watched keys of which one
// contains another.
//
// # Concurrency
//
// A Bucket, its typed views and a Lock are safe for concurrent use. A
// Watch calls its WatchFunc from one goroutine, one change at a time; serve
// it once at a time. Events go to [Config.Events] synchronously, from the
// goroutine that found the bucket declared again.
package kv
