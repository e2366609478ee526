package tasks

import (
	"time"

	"github.com/corral-go/corral/supervisor"
)

// LeaseAcquired is emitted when a worker holds a new lease and starts
// taking tasks under it. Worker is the lease's identity, Process the
// worker's Config.Process, here and in the events below.
type LeaseAcquired struct {
	supervisor.EventTime
	Queue    string
	Worker   string
	Process  string
	Capacity int
}

// LeaseLost is emitted when a worker finds that it could not renew its
// lease in time (cut off, or paused past it), at once, not when its tasks
// have stopped. Held is what it held then, the tasks running and the
// copies taken to run, as Status counts them: it cancels them all and
// writes nothing more about them; the recoverer puts the tasks it claimed
// back in the queue once the lease has expired, and the copies it had
// not claimed come back after ClaimWait, or at once when it gives them
// back.
type LeaseLost struct {
	supervisor.EventTime
	Queue   string
	Worker  string
	Process string
	Held    int
}

// WorkerDead is emitted by the recoverer when a worker's lease expired
// or was released with tasks still held. Process is the dead worker's,
// read from its records; it is empty when none was found that names it
// (the worker held nothing, or its records predate the header).
type WorkerDead struct {
	supervisor.EventTime
	Queue   string
	Worker  string
	Process string `log:",omitempty"`
}

// TasksRecovered is emitted by the recoverer when it has put the tasks of
// a dead worker back in the queue. Process is the dead worker's, as in
// WorkerDead.
type TasksRecovered struct {
	supervisor.EventTime
	Queue   string
	Worker  string
	Process string `log:",omitempty"`
	Tasks   int
	Took    time.Duration
}

// RecovererElected is emitted when this process becomes the one that
// recovers the tasks of dead workers of the queue.
type RecovererElected struct {
	supervisor.EventTime
	Queue  string
	Worker string
}

// CompletionRejected is emitted when a write about a task was refused
// because the task is no longer the worker's (see ErrFenced): its run's
// result is dropped, and the task runs again elsewhere. Worker and
// Process are those the task's record names; Process is empty for a
// record that predates the header.
type CompletionRejected struct {
	supervisor.EventTime
	Queue   string
	Task    string
	Worker  string
	Process string `log:",omitempty"`
	Err     error
}

// DeadLettered is emitted when a task left the queue without completing:
// it failed MaxFailures times, or the server refused a write of it for
// its size (its claim or its put-back), so that it could run nowhere.
// DeadLetter is the subject that stored its dead letter; it is empty when
// none is configured, or when the server refused the dead letter for its
// size too. Err is the run's error, and the refusals, if any.
type DeadLettered struct {
	supervisor.EventTime
	Queue      string
	Task       string
	DeadLetter string `log:",omitempty"`
	Failures   int
	Err        error
}

// TaskPanicked is emitted when a task's run panicked; the run counts as
// failed. At most one event a second per worker: Suppressed counts the
// panics since the previous event.
type TaskPanicked struct {
	supervisor.EventTime
	Queue      string
	Task       string
	Err        *supervisor.PanicError
	Suppressed uint64 `log:",omitempty"`
}

// QueueError is emitted when the worker could not talk to the queue as it
// should (a pull, a claim, a put-back or a scan failed); it tries again.
// Failures to pull until the queue answers again are one episode, which
// [QueueRecovered] ends; Repeated counts the failures in a row before
// this one that it repeats: the same error, or, as this one, a sign that
// JetStream cannot answer for now (a lost node shows as several), so that
// a node's loss logs one warning and its recovery.
type QueueError struct {
	supervisor.EventTime
	Queue    string
	Op       string
	Err      error
	Repeated int `log:",omitempty"`
}

// QueueRecovered is emitted when the queue answers the worker's pulls
// again after the failures an episode of [QueueError] reported. Failures
// counts them; Took is the time since the first.
type QueueRecovered struct {
	supervisor.EventTime
	Queue    string
	Failures int
	Took     time.Duration
}

// Kind returns "tasks.lease_acquired".
func (LeaseAcquired) Kind() string { return "tasks.lease_acquired" }

// Kind returns "tasks.lease_lost".
func (LeaseLost) Kind() string { return "tasks.lease_lost" }

// Kind returns "tasks.worker_dead".
func (WorkerDead) Kind() string { return "tasks.worker_dead" }

// Kind returns "tasks.tasks_recovered".
func (TasksRecovered) Kind() string { return "tasks.tasks_recovered" }

// Kind returns "tasks.recoverer_elected".
func (RecovererElected) Kind() string { return "tasks.recoverer_elected" }

// Kind returns "tasks.completion_rejected".
func (CompletionRejected) Kind() string { return "tasks.completion_rejected" }

// Kind returns "tasks.dead_lettered".
func (DeadLettered) Kind() string { return "tasks.dead_lettered" }

// Kind returns "tasks.task_panicked".
func (TaskPanicked) Kind() string { return "tasks.task_panicked" }

// Kind returns "tasks.queue_error".
func (QueueError) Kind() string { return "tasks.queue_error" }

// Level returns ErrorLevel.
func (LeaseLost) Level() supervisor.Level { return supervisor.ErrorLevel }

// Level returns WarnLevel.
func (WorkerDead) Level() supervisor.Level { return supervisor.WarnLevel }

// Level returns WarnLevel.
func (TasksRecovered) Level() supervisor.Level { return supervisor.WarnLevel }

// Level returns ErrorLevel.
func (CompletionRejected) Level() supervisor.Level { return supervisor.ErrorLevel }

// Level returns WarnLevel.
func (DeadLettered) Level() supervisor.Level { return supervisor.WarnLevel }

// Level returns ErrorLevel.
func (TaskPanicked) Level() supervisor.Level { return supervisor.ErrorLevel }

// Level returns WarnLevel, or DebugLevel for a repeated failure.
func (e QueueError) Level() supervisor.Level {
	if e.Repeated > 0 {
		return supervisor.DebugLevel
	}
	return supervisor.WarnLevel
}

// Kind returns "tasks.queue_recovered".
func (QueueRecovered) Kind() string { return "tasks.queue_recovered" }

// Level returns InfoLevel.
func (QueueRecovered) Level() supervisor.Level { return supervisor.InfoLevel }

// ScheduleDeclared is emitted when a worker writes a periodic schedule of
// its configuration that the queue did not have as it is: new, or
// changed. Workers that find it unchanged write nothing.
type ScheduleDeclared struct {
	supervisor.EventTime
	Queue    string
	Schedule string
	Pattern  string // as the server reads it: "@every 1m0s", a cron expression
}

// Kind returns "tasks.schedule_declared".
func (ScheduleDeclared) Kind() string { return "tasks.schedule_declared" }

// Level returns InfoLevel.
func (ScheduleDeclared) Level() supervisor.Level { return supervisor.InfoLevel }

// ScheduleRemoved is emitted when a worker deletes a periodic schedule
// that Corral declared and its configuration no longer has.
type ScheduleRemoved struct {
	supervisor.EventTime
	Queue    string
	Schedule string
}

// Kind returns "tasks.schedule_removed".
func (ScheduleRemoved) Kind() string { return "tasks.schedule_removed" }

// Level returns InfoLevel.
func (ScheduleRemoved) Level() supervisor.Level { return supervisor.InfoLevel }
