package supervisor

import (
	"time"

	"go.uber.org/zap/zapcore"

	"github.com/corral-go/corral/internal/logfield"
)

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

func (e ChildStarted) Level() Level {
	if e.Restarts > 0 {
		return InfoLevel
	}
	return DebugLevel
}
func (ChildFailed) Level() Level  { return ErrorLevel }
func (ChildBackoff) Level() Level { return WarnLevel }
func (ChildResumed) Level() Level { return InfoLevel }
func (e ChildStopped) Level() Level {
	if e.Err != nil {
		return ErrorLevel
	}
	return DebugLevel
}
func (ChildStopTimeout) Level() Level { return ErrorLevel }

func (e ChildStarted) MarshalLogObject(enc zapcore.ObjectEncoder) error {
	enc.AddString("child", e.Child)
	enc.AddInt("restarts", e.Restarts)
	return nil
}

func (e ChildFailed) MarshalLogObject(enc zapcore.ObjectEncoder) error {
	enc.AddString("child", e.Child)
	logfield.Error(enc, e.Err)
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
	logfield.Error(enc, e.Err)
	return nil
}

func (e ChildStopTimeout) MarshalLogObject(enc zapcore.ObjectEncoder) error {
	enc.AddString("child", e.Child)
	enc.AddDuration("timeout", e.Timeout)
	return nil
}
