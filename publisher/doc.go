// Package publisher is Corral's buffered JetStream publisher: the
// application hands it messages whether or not NATS is reachable, and it
// sends them, confirms each with the stream's ack, and sends again what a
// disconnect, a timeout or a transient error lost, until every message is
// stored or has failed for good. See the README's "Publishing" section for
// the guarantees in full: deduplication, order, stops and crashes.
//
// # Overview
//
// [New] returns a [Buffered]. [Buffered.Publish] and [Buffered.PublishMsg]
// return once the message is in the bounded buffer (and the spool, with
// one), with a [Future] of its ack; [Buffered.PublishSync] waits for the
// ack. Every message carries a Nats-Msg-Id ([WithMsgID], or a generated
// one unless [Config.NoMsgID]), so a message sent twice is stored once
// within the stream's duplicate window. [Option] values set the Msg-Id and the stream's
// expectations ([WithExpectLastSequencePerSubject] and others).
//
// A message goes one way: accepted into the buffer (and spool), taken by
// the send loop in accept order, handed to nats.go, and settled by the
// stream's answer: acknowledged, sent again later, or failed and reported
// to [Config.OnUndelivered].
//
// # Lifecycle
//
// Buffered is a suture.Service: [Buffered.Serve] sends on the live
// connection of a [connection.Source], follows its replacements, and
// holds messages while there is none. When its ctx ends it refuses new
// messages, flushes until the shutdown timeout of [Config.Restart], and
// reports every message not acknowledged, in a [Stopped] event and to
// OnUndelivered, or leaves it in the spool for the next start. Serve may
// be called again after it returned. [Buffered.Close] ends a publisher
// that is not being served, as a stop without the flush.
//
// # Configuration
//
// [Config]'s zero value is valid: a buffer of 10000 messages and 64MiB
// that fails Publish when full ([Block] waits instead), 4000 messages in
// flight, a 5s ack timeout, retries from 100ms doubling to 5s, at most 20
// failed sends per message, no spool. [Config.Streams] are declared
// whenever the publisher connects; [Config.SpoolDir] keeps the buffer on
// disk across crashes. Config.Validate reports every problem at once.
//
// # Errors
//
// Publish fails at once with [ErrBufferFull], [ErrTooLarge],
// [ErrSubjectTooLong], [ErrBadSubject], [ErrBadHeader], [ErrNilMsg],
// [ErrStopped] or a spool write error; [CheckMsg] is its check of a
// message, for core publishes and requests. After that each message is
// settled once, on its Future: the stream's ack, or a final error, at
// once and without a retry:
// [ErrNoStream]; a failed expectation; [ErrStreamFull] wrapping the
// server's *jetstream.APIError when there is no room (a stream with
// discard new at a limit, the account's or the server's JetStream storage
// exhausted: room comes back on no schedule a retry could follow); a
// message too large for the stream or any other bad request (a 400 answer
// with an error code); a publish refused for permissions
// (nats.ErrPermissionViolation); JetStream not enabled for the account; or
// [ErrGaveUp] after MaxAttempts failed sends. Everything else is
// transient and retried with backoff (timeouts, no responders, a store
// closed while its stream restarts, JetStream or the cluster
// unavailable); sends lost to a dropped connection do not count as
// attempts. The README's "Publishing" section lists the server's codes.
// PublishSync returns [ErrNotDeclared] with the server's refusal when it
// refuses to declare [Config.Streams]; the message stays buffered. A
// declaration that failed for a passing reason is made again, and
// PublishSync waits for it. A message a stop did not deliver fails with
// [ErrStopped], joined with [ErrMaybeStored] or [ErrSpooled]. Final
// failures are also [PublishFailed] events, but for an expectation that
// did not hold (Status.Refused): that is the answer a compare-and-set
// asks for.
//
// # Concurrency
//
// All methods of Buffered and Future are safe for concurrent use.
// OnUndelivered and the event hook of [supervisor.Events] run on
// whichever goroutine settles a message (the send loop, nats.go's
// callback goroutine, a PublishSync caller) and must not block.
package publisher
