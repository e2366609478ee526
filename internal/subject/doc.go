// Package subject validates NATS subjects and queue group names when a
// handler or publisher is declared, rather than when the server rejects a
// subscription. It is stricter than the server in one way: a '*' or '>'
// inside a token ("a.b*") is refused, where the server would take it as a
// literal, because it is almost always a mistaken wildcard.
package subject
