// Package subject validates NATS subjects, queue group names, and the
// names of buckets and object stores when they are declared, rather than
// when the server rejects a subscription or a stream. It is stricter than
// the server in one way: a '*' or '>' inside a token ("a.b*") is refused,
// where the server would take it as a literal, because it is almost
// always a mistaken wildcard.
package subject
