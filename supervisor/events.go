package supervisor

import (
	"time"

	"go.uber.org/zap/zapcore"

	"github.com/corral-go/corral/internal/logfield"
)

// ChildStarted is emitted when a child's Serve begins. Restarts counts
// its earlier runs in the current Serve of the tree.
type ChildStarted struct {
	EventTime
	Child    string
	Restarts int
}

// ChildFailed is emitted when a child fails: it returned an error,
// panicked, or returned nil while permanent. RestartIn is the delay before it runs again; when
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

// ChildBackoff is emitted when a child failed more often than its
// threshold allows: its restarts pause for about Backoff.
type ChildBackoff struct {
	EventTime
	Child   string
	Backoff time.Duration
}

// ChildResumed is emitted when the pause that ChildBackoff announced is
// over.
type ChildResumed struct {
	EventTime
	Child string
}

// ChildStopped is emitted when a child ended and will not be restarted:
// it is temporary, or transient and returned cleanly, or its tree is
// stopping. Err is what
// it returned, if that was a failure.
type ChildStopped struct {
	EventTime
	Child string
	Err   error
}

// ChildStopTimeout is emitted when a child did not stop within its
// shutdown timeout.
type ChildStopTimeout struct {
	EventTime
	Child   string
	Timeout time.Duration
}

// Kind returns "supervisor.child_started".
func (ChildStarted) Kind() string { return "supervisor.child_started" }

// Kind returns "supervisor.child_failed".
func (ChildFailed) Kind() string { return "supervisor.child_failed" }

// Kind returns "supervisor.child_backoff".
func (ChildBackoff) Kind() string { return "supervisor.child_backoff" }

// Kind returns "supervisor.child_resumed".
func (ChildResumed) Kind() string { return "supervisor.child_resumed" }

// Kind returns "supervisor.child_stopped".
func (ChildStopped) Kind() string { return "supervisor.child_stopped" }

// Kind returns "supervisor.child_stop_timeout".
func (ChildStopTimeout) Kind() string { return "supervisor.child_stop_timeout" }

// Level returns the level the event is logged at.
func (e ChildStarted) Level() Level {
	if e.Restarts > 0 {
		return InfoLevel
	}
	return DebugLevel
}

// Level returns ErrorLevel.
func (ChildFailed) Level() Level { return ErrorLevel }

// Level returns WarnLevel.
func (ChildBackoff) Level() Level { return WarnLevel }

// Level returns InfoLevel.
func (ChildResumed) Level() Level { return InfoLevel }

// Level returns the level the event is logged at.
func (e ChildStopped) Level() Level {
	if e.Err != nil {
		return ErrorLevel
	}
	return DebugLevel
}

// Level returns ErrorLevel.
func (ChildStopTimeout) Level() Level { return ErrorLevel }

// MarshalLogObject writes the event's fields for zap.
func (e ChildStarted) MarshalLogObject(enc zapcore.ObjectEncoder) error {
	enc.AddString("child", e.Child)
	enc.AddInt("restarts", e.Restarts)
	return nil
}

// MarshalLogObject writes the event's fields for zap.
func (e ChildFailed) MarshalLogObject(enc zapcore.ObjectEncoder) error {
	enc.AddString("child", e.Child)
	logfield.Error(enc, e.Err)
	enc.AddFloat64("failures", e.Failures)
	enc.AddFloat64("threshold", e.Threshold)
	enc.AddBool("restarting", e.Restarting)
	enc.AddDuration("restart_in", e.RestartIn)
	return nil
}

// MarshalLogObject writes the event's fields for zap.
func (e ChildBackoff) MarshalLogObject(enc zapcore.ObjectEncoder) error {
	enc.AddString("child", e.Child)
	enc.AddDuration("backoff", e.Backoff)
	return nil
}

// MarshalLogObject writes the event's fields for zap.
func (e ChildResumed) MarshalLogObject(enc zapcore.ObjectEncoder) error {
	enc.AddString("child", e.Child)
	return nil
}

// MarshalLogObject writes the event's fields for zap.
func (e ChildStopped) MarshalLogObject(enc zapcore.ObjectEncoder) error {
	enc.AddString("child", e.Child)
	logfield.Error(enc, e.Err)
	return nil
}

// MarshalLogObject writes the event's fields for zap.
func (e ChildStopTimeout) MarshalLogObject(enc zapcore.ObjectEncoder) error {
	enc.AddString("child", e.Child)
	enc.AddDuration("timeout", e.Timeout)
	return nil
}
