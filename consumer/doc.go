// Package consumer runs message handlers on bounded worker pools under a
// supervision tree: core NATS subscriptions, request/reply endpoints and
// JetStream pull consumers.
//
// # Overview
//
// A [Group] holds the declared handlers. [Group.Handle] binds a name and a
// [Config] to a [Handler] (or a [HandlerFunc]), in the http.Handler style;
// [Group.HandleRequest] binds a [RequestHandler] that answers each
// request with a [Reply] or a [ServiceError]. Each handler is a
// subscription, or a pull consumer when [Config] names a stream, feeding a
// bounded queue that a fixed number of workers drain:
//
//	subscription -> queue (QueueSize) -> Workers goroutines -> handler(ctx, *Msg)
//
// A full queue is how a slow consumer is detected: the handler's
// [Overflow] policy decides what happens, and each episode is reported
// once ([SlowConsumerStarted], [SlowConsumerEnded]). A JetStream handler
// pulls only what its pool has room for and settles each message by the
// handler's result: nil acks, an error naks with backoff, [Terminal]
// terminates, and past MaxDeliver the message goes to the dead-letter
// subject. A consumer near its MaxAckPending, where the server holds back
// deliveries and redeliveries, is reported once an episode
// ([AckPendingHigh], [AckPendingNormal]). A request answered with a 4xx
// [ServiceError] counts in [Counters].ClientErrors, not as a failure.
// Each request handler also answers NATS micro discovery ($SRV.PING, INFO,
// STATS) as a service ([Service]).
//
// [Typed] and [TypedRequest] decode the payload into the handler's type
// ([JSON] by default, any [Codec]); a payload that cannot be decoded is
// never retried. A [Middleware] wraps handlers, those of the whole Group
// ([Group.Use]) outside each handler's own ([Config].Middleware), all
// inside the pool's timeout and panic recovery.
// See the README's "Handlers, queues and overflow policies" and
// "JetStream handlers" sections for the full behaviour.
//
// # Lifecycle
//
// A Group is a suture.Service whose children are its handlers, each with
// its own restart policy. Handlers are declared before [Group.Serve] as a
// rule; one declared while it serves starts at once, and [Group.Remove]
// drains one and forgets it (a JetStream handler's durable consumer is
// kept). A handler follows a replaced connection by itself. When Serve's ctx ends, every
// handler drains at once within its shutdown timeout: it stops taking
// messages, lets its workers finish what runs (and, for core handlers,
// what is queued), hands unstarted JetStream messages back for redelivery
// at once, and only when its grace period (the shutdown timeout less a
// tenth, at most a second) runs out cancels the handlers' ctx. A
// [Drained] event reports what was finished, abandoned and returned.
//
// # Configuration
//
// [Config] (and [JetStream] within it) carries yaml tags; every field's
// comment states its default, and [Config.Validate] reports every problem
// at once. The root package binds configuration entries to handlers by
// name; see the README's "Configuration" section.
//
// # Errors
//
// [Group.Handle] and [Group.HandleRequest] fail at once for a bad
// declaration: errors wrap [supervisor.ErrInvalidConfig], [ErrDuplicateHandler] or
// [ErrNilHandler] and name the field. A JetStream handler checks at start
// what only the server knows: a stream that does not exist, or a
// DeadLetter subject that no stream stores (unless it declares the one
// that does, JetStream.CreateDeadLetterStream), fails its start with an
// error naming the handler and the fix. A handler's own error is counted
// (and, for JetStream, settles the message); a panic is recovered per
// message into a *[supervisor.PanicError], counted as a failure and
// reported by [HandlerPanicked]. Failures to consume (a lost pull request,
// a deleted consumer) are [ConsumeError] events, recovered from by
// themselves, one warning per episode, which [ConsumeRecovered] ends; one
// the handler cannot recover from fails its Serve, and the tree restarts
// it per its policy.
//
// # Concurrency
//
// With more than one worker, a handler runs concurrently with itself. A
// [Msg] belongs to the call it is passed to. [Group.Status] and the
// Group's declarations are safe for concurrent use.
package consumer
