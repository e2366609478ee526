// Package objectstore is JetStream object stores that follow the
// connection, stream objects in constant memory, and verify what they
// read.
//
// # Overview
//
//	s, err := objectstore.Open("reports", objectstore.Config{}, conns)
//	info, err := s.Put(ctx, "2026-11.csv", r) // any io.Reader, in chunks
//	_, err = s.Get(ctx, "2026-11.csv", w)     // any io.Writer
//
// A put that fails midway leaves no object visible; a get that reads
// something other than the object's SHA-256 digest returns
// ErrDigestMismatch (GetFile then leaves no file behind).
//
// # Watches
//
// Store.Watch returns a suture.Service that delivers every change of the
// store once and in order, resuming after the last one delivered when it
// is served again, as the kv package's watches do.
//
// # Errors
//
// ErrNotFound and ErrDigestMismatch also match nats.go's
// jetstream.ErrObjectNotFound and jetstream.ErrDigestMismatch with
// errors.Is; ErrStoreNotFound is a bound store that does not exist.
package objectstore
