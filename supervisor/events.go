package supervisor

import (
	"errors"
	"strings"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
)

// Event is something that happened in a Corral tree: a child failed, a
// connection dropped, a consumer fell behind. Every package defines its
// events as structs that embed EventTime; a hook receives them all and
// tells them apart with a type switch. Events are also logged (see Events),
// so logs and hooks never disagree.
type Event interface {
	// Kind is a stable dotted name, e.g. "connection.disconnected".
	Kind() string
	// Level is the zap level the event is logged at.
	Level() zapcore.Level
	// MarshalLogObject writes the event's fields for logging.
	zapcore.ObjectMarshaler
	// When is the time the event happened.
	When() time.Time
	sealed()
}

// EventTime is embedded by every event; it carries the time and seals the
// Event interface to types that embed it.
type EventTime struct {
	At time.Time
}

// When returns At.
func (e EventTime) When() time.Time { return e.At }

func (EventTime) sealed() {}

// Hook receives every event. It is called synchronously from the goroutine
// that saw the event (a nats.go callback, a worker, the supervisor), so it
// must return quickly and must not block.
type Hook func(Event)

// Events logs events and passes them to a hook. The zero value discards
// both. It is safe for concurrent use.
type Events struct {
	log  *zap.Logger
	hook Hook
	now  func() time.Time
}

// NewEvents returns an emitter that logs to log (nil: nowhere) and calls
// hook (nil: nothing). now is the clock stamped on events (nil: time.Now).
func NewEvents(log *zap.Logger, hook Hook, now func() time.Time) *Events {
	if log == nil {
		log = zap.NewNop()
	}
	if now == nil {
		now = time.Now
	}
	return &Events{log: log, hook: hook, now: now}
}

// Now is the emitter's clock, for stamping events.
func (e *Events) Now() EventTime {
	if e == nil || e.now == nil {
		return EventTime{At: time.Now()}
	}
	return EventTime{At: e.now()}
}

// Logger returns the logger events are written to.
func (e *Events) Logger() *zap.Logger {
	if e == nil || e.log == nil {
		return zap.NewNop()
	}
	return e.log
}

// Emit logs ev at its level with its fields, then calls the hook.
func (e *Events) Emit(ev Event) {
	if e == nil {
		return
	}
	if e.log != nil {
		if ce := e.log.Check(ev.Level(), ev.Kind()); ce != nil {
			component, _, _ := strings.Cut(ev.Kind(), ".")
			ce.Write(zap.String("component", component), zap.Inline(ev))
		}
	}
	if e.hook != nil {
		e.hook(ev)
	}
}

// ChildStarted: a child's Serve began. Restarts counts earlier runs.
type ChildStarted struct {
	EventTime
	Child    string
	Restarts int
}

// ChildFailed: a child failed (returned an error, panicked, or returned
// nil while permanent). RestartIn is the delay before it runs again; when
// Restarting is false its supervisor is pausing (see ChildBackoff) or the
// child will not be restarted.
type ChildFailed struct {
	EventTime
	Child      string
	Err        error
	Failures   float64
	Threshold  float64
	Restarting bool
	RestartIn  time.Duration
}

// ChildBackoff: the child failed more than its threshold allows; restarts
// pause for about Backoff.
type ChildBackoff struct {
	EventTime
	Child   string
	Backoff time.Duration
}

// ChildResumed: the pause after ChildBackoff is over.
type ChildResumed struct {
	EventTime
	Child string
}

// ChildStopped: a child ended and will not be restarted: it is temporary,
// or transient and returned cleanly, or its tree is stopping. Err is what
// it returned, if that was a failure.
type ChildStopped struct {
	EventTime
	Child string
	Err   error
}

// ChildStopTimeout: a child did not stop within its shutdown timeout.
type ChildStopTimeout struct {
	EventTime
	Child   string
	Timeout time.Duration
}

func (ChildStarted) Kind() string     { return "supervisor.child_started" }
func (ChildFailed) Kind() string      { return "supervisor.child_failed" }
func (ChildBackoff) Kind() string     { return "supervisor.child_backoff" }
func (ChildResumed) Kind() string     { return "supervisor.child_resumed" }
func (ChildStopped) Kind() string     { return "supervisor.child_stopped" }
func (ChildStopTimeout) Kind() string { return "supervisor.child_stop_timeout" }

func (e ChildStarted) Level() zapcore.Level {
	if e.Restarts > 0 {
		return zapcore.InfoLevel
	}
	return zapcore.DebugLevel
}
func (ChildFailed) Level() zapcore.Level  { return zapcore.ErrorLevel }
func (ChildBackoff) Level() zapcore.Level { return zapcore.WarnLevel }
func (ChildResumed) Level() zapcore.Level { return zapcore.InfoLevel }
func (e ChildStopped) Level() zapcore.Level {
	if e.Err != nil {
		return zapcore.ErrorLevel
	}
	return zapcore.DebugLevel
}
func (ChildStopTimeout) Level() zapcore.Level { return zapcore.ErrorLevel }

func (e ChildStarted) MarshalLogObject(enc zapcore.ObjectEncoder) error {
	enc.AddString("child", e.Child)
	enc.AddInt("restarts", e.Restarts)
	return nil
}

func (e ChildFailed) MarshalLogObject(enc zapcore.ObjectEncoder) error {
	enc.AddString("child", e.Child)
	AddError(enc, e.Err)
	enc.AddFloat64("failures", e.Failures)
	enc.AddFloat64("threshold", e.Threshold)
	enc.AddBool("restarting", e.Restarting)
	enc.AddDuration("restart_in", e.RestartIn)
	return nil
}

func (e ChildBackoff) MarshalLogObject(enc zapcore.ObjectEncoder) error {
	enc.AddString("child", e.Child)
	enc.AddDuration("backoff", e.Backoff)
	return nil
}

func (e ChildResumed) MarshalLogObject(enc zapcore.ObjectEncoder) error {
	enc.AddString("child", e.Child)
	return nil
}

func (e ChildStopped) MarshalLogObject(enc zapcore.ObjectEncoder) error {
	enc.AddString("child", e.Child)
	AddError(enc, e.Err)
	return nil
}

func (e ChildStopTimeout) MarshalLogObject(enc zapcore.ObjectEncoder) error {
	enc.AddString("child", e.Child)
	enc.AddDuration("timeout", e.Timeout)
	return nil
}

// AddError writes err, if any, as an "error" field, with the stack of a
// panic. Packages use it to log errors in events the same way.
func AddError(enc zapcore.ObjectEncoder, err error) {
	if err == nil {
		return
	}
	enc.AddString("error", err.Error())
	var pe *PanicError
	if errors.As(err, &pe) {
		enc.AddByteString("stack", pe.Stack)
	}
}
