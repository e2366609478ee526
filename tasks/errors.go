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
	// ErrReservedMsgID is returned for a task enqueued with a Msg-Id
	// that begins with ReservedMsgIDPrefix.
	ErrReservedMsgID = errors.New("tasks: the Msg-Id is reserved for the queue's own writes")
)

// ReservedMsgIDPrefix begins the Msg-Ids of the queue's own writes (a
// task put back, a dead letter). A task enqueued with such an id could
// be taken for one of them and dropped as a duplicate: corral.Client's
// Enqueue refuses it with ErrReservedMsgID.
const ReservedMsgIDPrefix = "Corral-Task-"
