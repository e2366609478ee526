// Package publisher is the buffered JetStream publisher: Publish returns
// once a message is accepted into a bounded buffer, and the publisher
// sends it, confirms it with the stream's ack, and sends it again after a
// disconnect, a timeout or a transient error, until it is stored or fails
// for good.
//
// # Overview
//
//	f, err := pub.Publish(ctx, "orders.created", data) // buffered: returns without waiting for the network
//	ack, err := f.Wait(ctx)                            // the stream's ack, or the final error
//	ack, err := pub.PublishSync(ctx, "orders.created", data)
//
// Publish only appends to the buffer (and to the spool, if there is one);
// the send loop hands messages to nats.go. PublishSync, when nothing older
// waits, hands its message to nats.go itself, as nats.go's own synchronous
// publish does; nats.go may then block it while it flushes a full write
// buffer.
//
// Every message carries a Nats-Msg-Id (a generated one unless WithMsgID
// sets it), so a message sent twice (its ack was lost in a disconnect or
// timed out) is stored once, within the stream's duplicate window
// (default 2 minutes). A re-send that arrives after the window is stored
// again.
//
// # Errors
//
// Each message is settled once: its Future gets the stream's ack or a
// final error. Final errors: no stream stores the subject (ErrNoStream);
// an expected sequence, Msg-Id or stream did not match; the message is too
// large for the stream or server; the server refused the publish for
// permissions (nats.ErrPermissionViolation, seen through
// connection.Supervisor.OnAsyncError); JetStream is not enabled for the
// account; the sends failed MaxAttempts times (ErrGaveUp, wrapping the
// last error). Everything else (a dropped connection, an ack timeout, a
// leader election, account limits) is retried with a growing wait; sends
// lost to a dropped connection do not count as attempts.
//
// A message whose expectation fails on a re-send is looked up in the
// stream: the server checks expectations before Msg-Id duplicates, so
// the re-send of a message stored by its first send fails so. If the
// stream holds a message with its Msg-Id where the expectation puts it,
// the Future gets a duplicate ack instead of the error.
//
// With connection.Fixed there is no async error hook: a refused publish
// times out and is retried until MaxAttempts.
//
// Publish fails at once with ErrBufferFull (on_full: error), ErrTooLarge
// (checked against the server's max payload, 1MiB until the first
// connection; the server's own check is final), ErrStopped, or a spool
// write error. Every message that ends without being stored reaches
// OnUndelivered, with its headers: final failures, and messages a stop
// did not deliver.
//
// # Order
//
// The send loop sends messages in the order Publish accepted them, and
// nats.go keeps that order on the wire, as long as no send fails. Calls
// from one goroutine are accepted in call order; calls from different
// goroutines in the order they reach the buffer.
//
// After a failure the order is not kept: messages sent again go out in
// accept order, before messages not yet sent, but after those already in
// flight, which the stream may store first; and a message waiting to be
// retried after an error (not a lost connection) does not hold up the
// messages behind it. When order matters, publish with
// WithExpectLastSequencePerSubject, or read the stream's sequences.
//
// # Lifecycle
//
// Buffered is a suture.Service. While the connection is down it holds
// messages (up to BufferMsgs and BufferBytes) and sends them when it is
// back; a replaced connection is picked up by itself. If the connection
// it was given is closed for good (connection.Fixed), Serve returns an
// error wrapping nats.ErrConnectionClosed. At stop it refuses new
// messages, flushes for the shutdown timeout, and reports every message
// not acknowledged: in a Stopped event and to OnUndelivered, its Future
// failing with ErrStopped (joined with ErrMaybeStored if it was sent and
// not confirmed: publish it again with the same Msg-Id); or, with a
// spool, by leaving it there for the next start (ErrStopped joined with
// ErrSpooled). Serve may be called again after a stop. Close ends a
// publisher that is not being served, as a stop without the flush.
//
// # Configuration
//
// Config's zero value is valid: a buffer of 10000 messages and 64MiB that
// fails Publish with ErrBufferFull when full (on_full: block waits
// instead), 4000 messages in flight, a 5s ack timeout, retries from 100ms
// doubling to 5s, at most 20 failed sends per message. Streams lists
// streams to declare on connecting.
//
// # Durability
//
// Without a spool, a crash of the application loses what the buffer holds:
// messages accepted and not yet acknowledged. With SpoolDir, each accepted
// message is appended to a log in that directory before Publish returns,
// and marked settled once acknowledged or failed; the next start sends
// what is left, and Msg-Id deduplication drops those the stream already
// had, if they come back within the stream's duplicate window. The log
// survives a crash of the process; SpoolSync (an fsync per message, per
// settle and per segment created or removed) makes it survive a crash of
// the machine. A record torn by a crash is ignored; a damaged record in
// the middle of a segment is reported (SpoolCorrupt), the segment kept
// aside, the records before it spooled again. One publisher at a time
// may use a directory (ErrSpoolLocked).
//
// # Concurrency
//
// All methods are safe for concurrent use. OnUndelivered and the event
// hook run on whichever goroutine settles a message, nats.go's callback
// goroutine among them, and must not block.
package publisher
