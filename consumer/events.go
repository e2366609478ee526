package consumer

import (
	"time"

	"go.uber.org/zap/zapcore"

	"github.com/corral-go/corral/internal/logfield"
	"github.com/corral-go/corral/supervisor"
)

// SlowConsumerStarted: the handler's queue filled up; its overflow policy
// now applies. One event per episode, however many messages it affects.
type SlowConsumerStarted struct {
	supervisor.EventTime
	Handler   string
	Subject   string
	QueueSize int
	Overflow  Overflow
	// Pending is, for JetStream handlers, what the stream still holds for
	// the consumer.
	Pending uint64
}

// SlowConsumerEnded: the queue has drained below half and stayed there;
// Dropped and Rejected count what the episode cost.
type SlowConsumerEnded struct {
	supervisor.EventTime
	Handler  string
	Subject  string
	Dropped  uint64
	Rejected uint64
	Duration time.Duration
}

// HandlerPanicked: a handler call panicked; the message counts as failed
// and the pool carries on. At most one event a second per handler:
// Suppressed counts the panics since the previous event.
type HandlerPanicked struct {
	supervisor.EventTime
	Handler    string
	Subject    string
	Err        *supervisor.PanicError
	Suppressed uint64
}

// Subscribed: the handler subscribed (core), or its consumer is ready and
// it pulls (JetStream); again after a connection was replaced.
type Subscribed struct {
	supervisor.EventTime
	Handler  string
	Subject  string
	Queue    string
	Stream   string
	Consumer string
}

// Drained: the handler stopped. Finished counts the messages handled while
// stopping; Abandoned those that were queued or pending when its grace
// period ran out (for core NATS they are lost); Returned the JetStream
// messages that had not started, naked for redelivery at once.
type Drained struct {
	supervisor.EventTime
	Handler   string
	Subject   string
	Finished  uint64
	Abandoned uint64
	Returned  uint64
	Took      time.Duration
}

// ConsumeError: pulling from a JetStream consumer failed: missed
// heartbeats, the consumer or stream gone, no responders. The handler
// pulls again, declaring the consumer again when it is gone (or failing,
// when it is bound to an existing one).
type ConsumeError struct {
	supervisor.EventTime
	Handler  string
	Stream   string
	Consumer string
	Err      error
}

// ConsumerRecreated: the handler's consumer had disappeared and was
// declared again from its configuration.
type ConsumerRecreated struct {
	supervisor.EventTime
	Handler  string
	Stream   string
	Consumer string
}

// DeadLettered: a message failed MaxDeliver times; a copy was stored on the
// dead-letter subject and the message terminated.
type DeadLettered struct {
	supervisor.EventTime
	Handler    string
	Stream     string
	Consumer   string
	Subject    string
	DeadLetter string
	Sequence   uint64
	Deliveries uint64
	Err        error
}

// DeadLetterFailed: the dead-letter copy could not be stored, so the
// message was naked instead of terminated; it stays in its stream.
type DeadLetterFailed struct {
	DeadLettered
	PublishErr error
}

// MaxDeliveries: the server gave up redelivering a message (its
// max-deliveries advisory).
type MaxDeliveries struct {
	supervisor.EventTime
	Handler    string
	Stream     string
	Consumer   string
	Sequence   uint64
	Deliveries uint64
}

func (SlowConsumerStarted) Kind() string { return "consumer.slow_consumer_started" }
func (SlowConsumerEnded) Kind() string   { return "consumer.slow_consumer_ended" }
func (HandlerPanicked) Kind() string     { return "consumer.handler_panicked" }
func (Subscribed) Kind() string          { return "consumer.subscribed" }
func (Drained) Kind() string             { return "consumer.drained" }
func (ConsumeError) Kind() string        { return "consumer.consume_error" }
func (ConsumerRecreated) Kind() string   { return "consumer.consumer_recreated" }
func (DeadLettered) Kind() string        { return "consumer.dead_lettered" }
func (DeadLetterFailed) Kind() string    { return "consumer.dead_letter_failed" }
func (MaxDeliveries) Kind() string       { return "consumer.max_deliveries" }

func (ConsumeError) Level() supervisor.Level      { return supervisor.WarnLevel }
func (ConsumerRecreated) Level() supervisor.Level { return supervisor.WarnLevel }
func (DeadLettered) Level() supervisor.Level      { return supervisor.WarnLevel }
func (DeadLetterFailed) Level() supervisor.Level  { return supervisor.ErrorLevel }
func (MaxDeliveries) Level() supervisor.Level     { return supervisor.WarnLevel }

func (SlowConsumerStarted) Level() supervisor.Level { return supervisor.WarnLevel }
func (SlowConsumerEnded) Level() supervisor.Level   { return supervisor.WarnLevel }
func (HandlerPanicked) Level() supervisor.Level     { return supervisor.ErrorLevel }
func (Subscribed) Level() supervisor.Level          { return supervisor.DebugLevel }
func (e Drained) Level() supervisor.Level {
	if e.Abandoned > 0 {
		return supervisor.WarnLevel
	}
	return supervisor.InfoLevel
}

func (e SlowConsumerStarted) MarshalLogObject(enc zapcore.ObjectEncoder) error {
	enc.AddString("handler", e.Handler)
	enc.AddString("subject", e.Subject)
	enc.AddInt("queue_size", e.QueueSize)
	enc.AddString("overflow", string(e.Overflow))
	if e.Pending > 0 {
		enc.AddUint64("pending", e.Pending)
	}
	return nil
}

func (e SlowConsumerEnded) MarshalLogObject(enc zapcore.ObjectEncoder) error {
	enc.AddString("handler", e.Handler)
	enc.AddString("subject", e.Subject)
	enc.AddUint64("dropped", e.Dropped)
	enc.AddUint64("rejected", e.Rejected)
	enc.AddDuration("duration", e.Duration)
	return nil
}

func (e HandlerPanicked) MarshalLogObject(enc zapcore.ObjectEncoder) error {
	enc.AddString("handler", e.Handler)
	enc.AddString("subject", e.Subject)
	logfield.Error(enc, e.Err)
	enc.AddUint64("suppressed", e.Suppressed)
	return nil
}

func (e Subscribed) MarshalLogObject(enc zapcore.ObjectEncoder) error {
	enc.AddString("handler", e.Handler)
	if e.Subject != "" {
		enc.AddString("subject", e.Subject)
	}
	if e.Queue != "" {
		enc.AddString("queue", e.Queue)
	}
	addStream(enc, e.Stream, e.Consumer)
	return nil
}

func addStream(enc zapcore.ObjectEncoder, stream, consumer string) {
	if stream != "" {
		enc.AddString("stream", stream)
		enc.AddString("consumer", consumer)
	}
}

func (e ConsumeError) MarshalLogObject(enc zapcore.ObjectEncoder) error {
	enc.AddString("handler", e.Handler)
	addStream(enc, e.Stream, e.Consumer)
	logfield.Error(enc, e.Err)
	return nil
}

func (e ConsumerRecreated) MarshalLogObject(enc zapcore.ObjectEncoder) error {
	enc.AddString("handler", e.Handler)
	addStream(enc, e.Stream, e.Consumer)
	return nil
}

func (e DeadLettered) MarshalLogObject(enc zapcore.ObjectEncoder) error {
	enc.AddString("handler", e.Handler)
	addStream(enc, e.Stream, e.Consumer)
	enc.AddString("subject", e.Subject)
	enc.AddString("dead_letter", e.DeadLetter)
	enc.AddUint64("sequence", e.Sequence)
	enc.AddUint64("deliveries", e.Deliveries)
	logfield.Error(enc, e.Err)
	return nil
}

func (e DeadLetterFailed) MarshalLogObject(enc zapcore.ObjectEncoder) error {
	_ = e.DeadLettered.MarshalLogObject(enc)
	if e.PublishErr != nil {
		enc.AddString("publish_error", e.PublishErr.Error())
	}
	return nil
}

func (e MaxDeliveries) MarshalLogObject(enc zapcore.ObjectEncoder) error {
	enc.AddString("handler", e.Handler)
	addStream(enc, e.Stream, e.Consumer)
	enc.AddUint64("sequence", e.Sequence)
	enc.AddUint64("deliveries", e.Deliveries)
	return nil
}

func (e Drained) MarshalLogObject(enc zapcore.ObjectEncoder) error {
	enc.AddString("handler", e.Handler)
	enc.AddString("subject", e.Subject)
	enc.AddUint64("finished", e.Finished)
	enc.AddUint64("abandoned", e.Abandoned)
	if e.Returned > 0 {
		enc.AddUint64("returned", e.Returned)
	}
	enc.AddDuration("took", e.Took)
	return nil
}
