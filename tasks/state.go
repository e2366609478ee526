package tasks

// State is where a task is in its life, as the queue's streams record it.
type State string

// States a task of a queue can be in.
const (
	// StateWaiting: in the queue, to run as soon as a worker takes it.
	StateWaiting State = "waiting"
	// StateScheduled: waiting for its time (At, After).
	StateScheduled State = "scheduled"
	// StateRunning: held by a worker, which runs it.
	StateRunning State = "running"
	// StateCompleted: its run succeeded; known for KeepCompleted.
	StateCompleted State = "completed"
	// StateFailed: it failed for good (past MaxFailures, or a terminal
	// error) and left the queue, dead-lettered when DeadLetter is set;
	// known for KeepCompleted.
	StateFailed State = "failed"
	// StateCancelled: cancelled by Queue.Cancel before it ended; known for
	// KeepCompleted.
	StateCancelled State = "cancelled"
	// StateUnknown: the queue's streams show no task of the id (Cancel's
	// answer for one it cancels all the same).
	StateUnknown State = "unknown"
)
