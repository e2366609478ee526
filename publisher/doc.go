// Package publisher is the buffered JetStream publisher: Publish returns
// once a message is accepted into a bounded buffer, and the publisher
// sends it, confirms it with the stream's ack, and sends it again after a
// disconnect, a timeout or a transient error, until it is stored or fails
// for good.
//
// # Overview
//
//	f, err := pub.Publish(ctx, "orders.created", data) // buffered: returns at once
//	ack, err := f.Wait(ctx)                            // the stream's ack, or the final error
//	ack, err := pub.PublishSync(ctx, "orders.created", data)
//
// Every message carries a Nats-Msg-Id (a generated one unless WithMsgID
// sets it), so a message sent twice — its ack was lost in a disconnect or
// timed out — is stored once, within the stream's duplicate window
// (default 2 minutes). Errors that sending again cannot mend are final and
// reported on the Future, once: no stream stores the subject
// (ErrNoStream), an expected sequence or Msg-Id did not match, the message
// is too large. Everything else (a dropped connection, a timeout, a leader
// election) is retried with a growing wait.
//
// # Order
//
// Messages are sent in the order Publish accepted them, and nats.go keeps
// that order on the wire. A message sent again after a failure is sent
// before messages not yet sent, but after those already in flight: across
// a disconnect, messages can be stored out of order. When order matters,
// publish with WithExpectLastSequencePerSubject (one message in flight per
// subject), or read the stream's sequences.
//
// # Lifecycle
//
// Buffered is a suture.Service. While the connection is down it holds
// messages (up to BufferMsgs and BufferBytes) and sends them when it is
// back; a replaced connection is picked up by itself. At stop it refuses
// new messages, flushes for the shutdown timeout, and reports every message
// not acknowledged: to OnUndelivered and in a Stopped event, or, with a
// spool, by leaving it there for the next start.
//
// # Configuration
//
// Config's zero value is valid: a buffer of 10000 messages and 64MiB that
// fails Publish with ErrBufferFull when full (on_full: block waits
// instead), 4000 messages in flight, a 5s ack timeout, retries from 100ms
// doubling to 5s. Streams lists streams to declare on connecting.
//
// # Durability
//
// Without a spool, a crash of the application loses what the buffer holds:
// messages accepted and not yet acknowledged. With SpoolDir, each accepted
// message is appended to a log in that directory before Publish returns,
// and removed once settled; the next start sends what is left, and Msg-Id
// deduplication drops those the stream already had. The log survives a
// crash of the process; SpoolSync makes it survive a crash of the machine,
// at the cost of an fsync per message.
//
// # Concurrency
//
// All methods are safe for concurrent use.
package publisher
