// Package kv is typed JetStream key-value buckets: a codec per bucket,
// compare-and-set helpers, supervised watches and distributed locks.
//
// # Overview
//
//	b, err := kv.Open("settings", kv.Config{History: 5}, conns, kv.JSON[Limits]{})
//	rev, err := b.Put(ctx, "limits.api", Limits{Max: 100})
//	e, err := b.Update(ctx, "limits.api", func(old Limits, exists bool) (Limits, error) { ... })
//
// conns is a connection.Supervisor (the Client's) or connection.Fixed: a
// Bucket follows the connection across replacements and declares the
// bucket on first use on each connection.
//
// # Watches
//
// Bucket.Watch returns a suture.Service that delivers the revisions of the
// watched keys once and in order, and resumes after the last revision it
// delivered when it is served again after an error, a server restart or a
// replaced connection: no gap among the revisions the bucket still holds,
// and no duplicate. A revision the bucket discarded before the watch read
// it (beyond its History, or past its TTL) is skipped; the latest value of
// each key is always kept. Size History so that it outlasts the longest
// time a watch may fall behind.
//
// # Locks
//
// A Lock is a key with a TTL: one holder at a time, renewed by
// compare-and-set, with a fencing token (the acquiring revision) that
// grows with every acquisition, and a Lost channel closed the moment the
// holder can no longer be sure it holds the lock.
//
// # Errors
//
// ErrKeyNotFound, ErrKeyExists, ErrRevisionMismatch, ErrBucketNotFound and
// ErrValueTooLarge also match nats.go's matching errors with errors.Is.
// ErrInvalidKey is returned before any request for a key that ValidKey
// refuses; ErrTooManyConflicts when Update gave up. Bucket.Watch fails
// with ErrInvalidConfig for a nil WatchFunc, or keys of which one contains
// another, which the server would refuse at every start.
package kv
