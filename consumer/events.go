package consumer

import (
	"time"

	"github.com/corral-go/corral/supervisor"
)

// SlowConsumerStarted is emitted when a handler's queue fills up, or a
// JetStream handler has held all it can for longer than SlowAfter: its
// overflow policy now applies. It is emitted once per episode, however
// many messages the episode affects; [SlowConsumerEnded] closes it.
type SlowConsumerStarted struct {
	supervisor.EventTime
	Handler   string
	Subject   string
	QueueSize int
	Overflow  Overflow
	// Pending is, for JetStream handlers, what the stream still holds for
	// the consumer.
	Pending uint64 `log:",omitempty"`
}

// Kind returns "consumer.slow_consumer_started".
func (SlowConsumerStarted) Kind() string { return "consumer.slow_consumer_started" }

// Level returns [supervisor.WarnLevel].
func (SlowConsumerStarted) Level() supervisor.Level { return supervisor.WarnLevel }

// SlowConsumerEnded is emitted when a slow-consumer episode ends: the
// handler has been at most half full for a second, or it stopped. Dropped
// and Rejected count what the episode cost.
type SlowConsumerEnded struct {
	supervisor.EventTime
	Handler  string
	Subject  string
	Dropped  uint64
	Rejected uint64
	Duration time.Duration
}

// Kind returns "consumer.slow_consumer_ended".
func (SlowConsumerEnded) Kind() string { return "consumer.slow_consumer_ended" }

// Level returns [supervisor.WarnLevel].
func (SlowConsumerEnded) Level() supervisor.Level { return supervisor.WarnLevel }

// HandlerPanicked is emitted when a handler call panicked, or settling a
// JetStream message did: the message counts as failed and the pool
// carries on. It is emitted at most once a second per handler; Suppressed
// counts the panics since the previous event that were not reported.
type HandlerPanicked struct {
	supervisor.EventTime
	Handler    string
	Subject    string
	Err        *supervisor.PanicError
	Suppressed uint64
}

// Kind returns "consumer.handler_panicked".
func (HandlerPanicked) Kind() string { return "consumer.handler_panicked" }

// Level returns [supervisor.ErrorLevel].
func (HandlerPanicked) Level() supervisor.Level { return supervisor.ErrorLevel }

// HandlerFailed is emitted when a handler returned an error (a panic is
// HandlerPanicked instead), so that failures are seen without middleware:
// at most once a second per handler, Suppressed counting the failures
// since the previous event that were not reported. It names the message's
// subject and, for a JetStream message, its stream, consumer, stream
// sequence and delivery count; never its data or headers. A handler's
// log_failures: false turns it off.
type HandlerFailed struct {
	supervisor.EventTime
	Handler    string
	Subject    string
	Stream     string `log:",omitempty"`
	Consumer   string `log:",omitempty=Stream"`
	Sequence   uint64 `log:",omitempty=Stream"`
	Deliveries uint64 `log:",omitempty=Stream"`
	Err        error
	Suppressed uint64
}

// Kind returns "consumer.handler_failed".
func (HandlerFailed) Kind() string { return "consumer.handler_failed" }

// Level returns [supervisor.WarnLevel].
func (HandlerFailed) Level() supervisor.Level { return supervisor.WarnLevel }

// Subscribed is emitted when a core handler has subscribed, or a
// JetStream handler's consumer is ready and it pulls; again after the
// connection was replaced.
type Subscribed struct {
	supervisor.EventTime
	Handler  string
	Subject  string `log:",omitempty"`
	Queue    string `log:",omitempty"`
	Stream   string `log:",omitempty"`
	Consumer string `log:",omitempty=Stream"`
}

// Kind returns "consumer.subscribed".
func (Subscribed) Kind() string { return "consumer.subscribed" }

// Level returns [supervisor.DebugLevel].
func (Subscribed) Level() supervisor.Level { return supervisor.DebugLevel }

// Drained is emitted when a handler has stopped. Finished counts the
// messages handled while stopping; Abandoned those that were queued or
// pending when its grace period ran out (for core NATS they are lost);
// Returned the JetStream messages that had not started, or were cut off by
// the grace period, naked for redelivery at once.
type Drained struct {
	supervisor.EventTime
	Handler   string
	Subject   string
	Finished  uint64
	Abandoned uint64
	Returned  uint64 `log:",omitempty"`
	Took      time.Duration
}

// Kind returns "consumer.drained".
func (Drained) Kind() string { return "consumer.drained" }

// Level returns [supervisor.WarnLevel] when messages were abandoned,
// [supervisor.InfoLevel] otherwise.
func (e Drained) Level() supervisor.Level {
	if e.Abandoned > 0 {
		return supervisor.WarnLevel
	}
	return supervisor.InfoLevel
}

// ConsumeError is emitted when pulling from a JetStream consumer failed:
// missed heartbeats, the consumer or stream gone, no responders. The
// handler pulls again, declaring the consumer again when it is gone (or
// failing, when it is bound to an existing one). The failures until the
// consumer answers again are one episode, which [ConsumeRecovered] ends.
// Repeated counts the failures in a row before this one that it
// repeats: the same error, or, as this one, a sign that JetStream cannot
// answer for now (no answer in time, no responders, missed heartbeats, a
// leader changed: a lost node shows as any of them), so that a node's
// loss logs one warning and its recovery, not one per attempt.
type ConsumeError struct {
	supervisor.EventTime
	Handler  string
	Stream   string `log:",omitempty"`
	Consumer string `log:",omitempty=Stream"`
	Err      error
	Repeated int `log:",omitempty"`
}

// Kind returns "consumer.consume_error".
func (ConsumeError) Kind() string { return "consumer.consume_error" }

// Level returns [supervisor.WarnLevel], or [supervisor.DebugLevel] for a
// repeated failure.
func (e ConsumeError) Level() supervisor.Level {
	if e.Repeated > 0 {
		return supervisor.DebugLevel
	}
	return supervisor.WarnLevel
}

// ConsumeRecovered is emitted when the consumer answers again (a message,
// a heartbeat, the end of a request) after the failures an episode of
// [ConsumeError] reported. Failures counts them; Took is the time since
// the first.
type ConsumeRecovered struct {
	supervisor.EventTime
	Handler  string
	Stream   string `log:",omitempty"`
	Consumer string `log:",omitempty=Stream"`
	Failures int
	Took     time.Duration
}

// Kind returns "consumer.consume_recovered".
func (ConsumeRecovered) Kind() string { return "consumer.consume_recovered" }

// Level returns [supervisor.InfoLevel].
func (ConsumeRecovered) Level() supervisor.Level { return supervisor.InfoLevel }

// ConsumerRecreated is emitted when a handler's consumer had disappeared
// and was declared again from its configuration.
type ConsumerRecreated struct {
	supervisor.EventTime
	Handler  string
	Stream   string `log:",omitempty"`
	Consumer string `log:",omitempty=Stream"`
}

// Kind returns "consumer.consumer_recreated".
func (ConsumerRecreated) Kind() string { return "consumer.consumer_recreated" }

// Level returns [supervisor.WarnLevel].
func (ConsumerRecreated) Level() supervisor.Level { return supervisor.WarnLevel }

// DeadLettered is emitted when a message failed MaxDeliver times: a copy
// was stored on the dead-letter subject and the message terminated.
type DeadLettered struct {
	supervisor.EventTime
	Handler    string
	Stream     string `log:",omitempty"`
	Consumer   string `log:",omitempty=Stream"`
	Subject    string
	DeadLetter string
	Sequence   uint64
	Deliveries uint64
	Err        error
}

// Kind returns "consumer.dead_lettered".
func (DeadLettered) Kind() string { return "consumer.dead_lettered" }

// Level returns [supervisor.WarnLevel].
func (DeadLettered) Level() supervisor.Level { return supervisor.WarnLevel }

// DeadLetterFailed is emitted when a dead-letter copy could not be
// stored: the message was naked instead of terminated, and stays in its
// stream to be copied again at its next delivery. Repeated counts the
// copies of the handler that failed just before, none stored since: a
// repeated failure is logged at debug, so that one outage of the
// dead-letter stream logs one error, not one per delivery.
type DeadLetterFailed struct {
	DeadLettered
	PublishErr error `log:"publish_error"`
	Repeated   int   `log:",omitempty"`
}

// Kind returns "consumer.dead_letter_failed".
func (DeadLetterFailed) Kind() string { return "consumer.dead_letter_failed" }

// Level returns [supervisor.ErrorLevel], or [supervisor.DebugLevel] for a
// repeated failure.
func (e DeadLetterFailed) Level() supervisor.Level {
	if e.Repeated > 0 {
		return supervisor.DebugLevel
	}
	return supervisor.ErrorLevel
}

// MaxDeliveries is emitted when the server gave up redelivering a message
// of the handler's consumer (its max-deliveries advisory), for handlers
// without a dead-letter subject.
type MaxDeliveries struct {
	supervisor.EventTime
	Handler    string
	Stream     string `log:",omitempty"`
	Consumer   string `log:",omitempty=Stream"`
	Sequence   uint64
	Deliveries uint64
}

// Kind returns "consumer.max_deliveries".
func (MaxDeliveries) Kind() string { return "consumer.max_deliveries" }

// Level returns [supervisor.WarnLevel].
func (MaxDeliveries) Level() supervisor.Level { return supervisor.WarnLevel }

// AckPendingHigh is emitted when a JetStream handler's consumer has at
// least nine tenths of its MaxAckPending messages unacknowledged, across
// every instance: held by handlers, or naked and waiting out their
// backoff. At the limit the server delivers nothing new, and redeliveries
// can wait far longer than their nak delay. [AckPendingNormal] ends the
// episode, once the count is below seven tenths.
type AckPendingHigh struct {
	supervisor.EventTime
	Handler       string
	Stream        string `log:",omitempty"`
	Consumer      string `log:",omitempty=Stream"`
	AckPending    int
	MaxAckPending int
}

// Kind returns "consumer.ack_pending_high".
func (AckPendingHigh) Kind() string { return "consumer.ack_pending_high" }

// Level returns [supervisor.WarnLevel].
func (AckPendingHigh) Level() supervisor.Level { return supervisor.WarnLevel }

// AckPendingNormal is emitted when the episode [AckPendingHigh] began is
// over.
type AckPendingNormal AckPendingHigh

// Kind returns "consumer.ack_pending_normal".
func (AckPendingNormal) Kind() string { return "consumer.ack_pending_normal" }
