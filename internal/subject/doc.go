// Package subject validates NATS subjects, queue group names, and the
// names of buckets, object stores, streams and consumers when they are
// declared, rather than when the server rejects a subscription or a
// stream. It is stricter than the server in two ways: a '*' or '>' inside
// a token ("a.b*") is refused, where the server would take it as a
// literal, because it is almost always a mistaken wildcard; and a subject
// or queue group longer than MaxLen is refused, where the server would
// close the connection of whoever sent it (see MaxLen).
package subject
