package consumer

import (
	"time"

	"go.uber.org/zap/zapcore"

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

// Subscribed: the handler subscribed, on the connection of Generation;
// again after a connection was replaced.
type Subscribed struct {
	supervisor.EventTime
	Handler string
	Subject string
	Queue   string
}

// Drained: the handler stopped. Finished counts the messages handled while
// stopping; Abandoned those that were queued or pending when its grace
// period ran out (for core NATS they are lost).
type Drained struct {
	supervisor.EventTime
	Handler   string
	Subject   string
	Finished  uint64
	Abandoned uint64
	Took      time.Duration
}

func (SlowConsumerStarted) Kind() string { return "consumer.slow_consumer_started" }
func (SlowConsumerEnded) Kind() string   { return "consumer.slow_consumer_ended" }
func (HandlerPanicked) Kind() string     { return "consumer.handler_panicked" }
func (Subscribed) Kind() string          { return "consumer.subscribed" }
func (Drained) Kind() string             { return "consumer.drained" }

func (SlowConsumerStarted) Level() zapcore.Level { return zapcore.WarnLevel }
func (SlowConsumerEnded) Level() zapcore.Level   { return zapcore.WarnLevel }
func (HandlerPanicked) Level() zapcore.Level     { return zapcore.ErrorLevel }
func (Subscribed) Level() zapcore.Level          { return zapcore.DebugLevel }
func (e Drained) Level() zapcore.Level {
	if e.Abandoned > 0 {
		return zapcore.WarnLevel
	}
	return zapcore.InfoLevel
}

func (e SlowConsumerStarted) MarshalLogObject(enc zapcore.ObjectEncoder) error {
	enc.AddString("handler", e.Handler)
	enc.AddString("subject", e.Subject)
	enc.AddInt("queue_size", e.QueueSize)
	enc.AddString("overflow", string(e.Overflow))
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
	supervisor.AddError(enc, e.Err)
	enc.AddUint64("suppressed", e.Suppressed)
	return nil
}

func (e Subscribed) MarshalLogObject(enc zapcore.ObjectEncoder) error {
	enc.AddString("handler", e.Handler)
	enc.AddString("subject", e.Subject)
	if e.Queue != "" {
		enc.AddString("queue", e.Queue)
	}
	return nil
}

func (e Drained) MarshalLogObject(enc zapcore.ObjectEncoder) error {
	enc.AddString("handler", e.Handler)
	enc.AddString("subject", e.Subject)
	enc.AddUint64("finished", e.Finished)
	enc.AddUint64("abandoned", e.Abandoned)
	enc.AddDuration("took", e.Took)
	return nil
}
