package tasks

import (
	"errors"
)

var (
	// ErrFenced is returned when a worker's write about a task is refused
	// because the task is no longer its own: its lease was lost and the
	// task put back in the queue, where another worker takes it. The
	// write (a completion, a hand-back) has no effect.
	ErrFenced = errors.New("tasks: the task is no longer this worker's")
	// ErrLeaseLost is the error a worker's Serve returns when it could not
	// renew its lease in time: it stopped its tasks and wrote nothing more
	// about them; served again, it takes tasks under a new lease.
	ErrLeaseLost = errors.New("tasks: lease lost")
	// ErrNilHandler is returned for a nil handler.
	ErrNilHandler = errors.New("tasks: nil handler")
	// ErrReservedMsgID is returned by CheckTask for a task whose Msg-Id,
	// as the server stores it, begins with ReservedMsgIDPrefix.
	ErrReservedMsgID = errors.New("tasks: the Msg-Id is reserved for the queue's own writes")
	// ErrInvalidTaskID is returned by CheckTask for a Msg-Id that cannot
	// be a task's id: empty, longer than MaxIDLen, not UTF-8 text, with a
	// control character, or with white space at either end.
	ErrInvalidTaskID = errors.New("tasks: invalid task id")
	// ErrReservedHeader is returned by CheckTask for a task that sets a
	// header of the queue's own (beginning Corral-Task-), or a message
	// schedule's (beginning Nats-Schedule, Nats-Scheduler included).
	ErrReservedHeader = errors.New("tasks: the header is reserved for the queue's own")
	// ErrCancelled is the cause (context.Cause) of a run's ctx cancelled
	// by Queue.Cancel, and what a run cut short so ended with.
	ErrCancelled = errors.New("tasks: the task was cancelled")
	// ErrFinished is returned by Queue.Cancel for a task that completed or
	// failed already: there is nothing left to cancel.
	ErrFinished = errors.New("tasks: the task has ended already")
	// ErrNotWaiting is returned by Queue.Delete for a task that is not
	// waiting nor scheduled: it runs, or has ended.
	ErrNotWaiting = errors.New("tasks: the task is not waiting")
	// ErrTaskTooLarge is matched by the *TooLargeError CheckTask returns.
	ErrTaskTooLarge = errors.New("tasks: task too large")
	// ErrResultTooLarge is matched by the *ResultTooLargeError
	// Task.SetResult returns.
	ErrResultTooLarge = errors.New("tasks: result too large")
)

// ReservedMsgIDPrefix begins the Msg-Ids of the queue's own writes (a
// task put back, a dead letter) and the ids it makes for tasks published
// without a Msg-Id. A task enqueued with such an id could be taken for
// one of them and dropped as a duplicate: CheckTask, and so
// corral.Client's Enqueue, refuse it with ErrReservedMsgID.
const ReservedMsgIDPrefix = "Corral-Task-"
