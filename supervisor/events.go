package supervisor

import "time"

// ChildStarted is emitted when a child's Serve begins. Restarts counts
// its earlier runs in the current Serve of the tree; Repeated is that of
// the failure it restarts after (see ChildFailed).
type ChildStarted struct {
	EventTime
	Child    string
	Restarts int
	Repeated int `log:",omitempty"`
}

// ChildFailed is emitted when a child fails: it returned an error,
// panicked, or returned nil while permanent. RestartIn is the delay before
// it runs again; when Restarting is false the child is pausing (see
// ChildBackoff) or the child will not be restarted.
//
// A child's failures form an episode, which ends when the child starts
// successfully: when a [Starter] says so, or else when a run lasts longer
// than its FailureDecay. Failures counts the episode's failures, this one
// included. Repeated counts the failures in a row, before this one, whose
// error read the same, or that were, as this one, marked [Unavailable]: a
// failure that repeats the one before it is logged at debug, so that a
// child failing the same way at every restart logs one error per episode
// rather than one per restart (its pauses, see ChildBackoff, are still
// warnings). A failure marked Unavailable is logged as a warning. Threshold is the policy's
// failure_threshold, which is compared, as suture compares it, with a
// count that halves every FailureDecay, not with Failures.
type ChildFailed struct {
	EventTime
	Child      string
	Err        error
	Failures   int
	Repeated   int `log:",omitempty"`
	Threshold  float64
	Restarting bool
	RestartIn  time.Duration
}

// ChildBackoff is emitted when a child failed more often than its
// threshold allows: its restarts pause for about Backoff. Repeated is as
// in ChildFailed, but a pause is logged at warn even in a repeat.
type ChildBackoff struct {
	EventTime
	Child    string
	Backoff  time.Duration
	Repeated int `log:"-"`
}

// ChildResumed is emitted when the pause that ChildBackoff announced is
// over. Repeated is as in ChildFailed.
type ChildResumed struct {
	EventTime
	Child    string
	Repeated int `log:"-"`
}

// ChildRecovered is emitted when a [Starter] child that had failed starts
// successfully: its failure episode is over. Failures counts the
// episode's failures.
type ChildRecovered struct {
	EventTime
	Child    string
	Failures int
}

// Starter is implemented by a service whose start can fail after its
// Serve began (a handler that must find its stream, say). The tree calls
// OnStarted once, when the child is added; the service calls started
// whenever a run has started successfully, which ends the child's failure
// episode (see ChildFailed). A service that is not a Starter has started
// once a run lasts longer than its FailureDecay.
type Starter interface {
	OnStarted(started func())
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

// Kind returns "supervisor.child_recovered".
func (ChildRecovered) Kind() string { return "supervisor.child_recovered" }

// Kind returns "supervisor.child_stopped".
func (ChildStopped) Kind() string { return "supervisor.child_stopped" }

// Kind returns "supervisor.child_stop_timeout".
func (ChildStopTimeout) Kind() string { return "supervisor.child_stop_timeout" }

// Level returns InfoLevel for a restart, DebugLevel for the first start
// or a restart after a repeated failure.
func (e ChildStarted) Level() Level {
	if e.Restarts > 0 && e.Repeated == 0 {
		return InfoLevel
	}
	return DebugLevel
}

// Level returns ErrorLevel, WarnLevel for a failure marked [Unavailable],
// or DebugLevel for a repeated failure.
func (e ChildFailed) Level() Level {
	switch {
	case e.Repeated > 0:
		return DebugLevel
	case unavailable(e.Err):
		return WarnLevel
	}
	return ErrorLevel
}

// Level returns WarnLevel, repeated or not: a pause is rare (once per
// Backoff at most) and is what says a quiet episode still goes on.
func (e ChildBackoff) Level() Level { return WarnLevel }

// Level returns InfoLevel, or DebugLevel while a failure repeats.
func (e ChildResumed) Level() Level {
	if e.Repeated > 0 {
		return DebugLevel
	}
	return InfoLevel
}

// Level returns ErrorLevel when the child failed, DebugLevel otherwise.
func (e ChildStopped) Level() Level {
	if e.Err != nil {
		return ErrorLevel
	}
	return DebugLevel
}

// Level returns ErrorLevel.
func (ChildStopTimeout) Level() Level { return ErrorLevel }
