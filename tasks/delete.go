package tasks

import (
	"context"
	"errors"
	"fmt"

	"github.com/nats-io/nats.go/jetstream"
)

// Delete removes the task id from the queue while it waits or is
// scheduled, and returns the state it found it in. Unlike Cancel it
// leaves no trace: the task never runs, and enqueued again under its id,
// it runs as a new one. A task running or ended is left as it is, with
// ErrNotWaiting and its state (Cancel stops a running task); so is a copy
// a worker took between the lookup and the deletion. A copy a worker has
// taken and not yet claimed (Config.ClaimAfter) shows as waiting, and
// may run all the same: Cancel reaches it. Tasks enqueued on the queue's
// Subject (Client.Enqueue) are found by List, not by id: Delete returns
// ErrTaskNotFound for them.
func (q *Queue) Delete(ctx context.Context, id string) (State, error) {
	if err := checkLookupID(id); err != nil {
		return StateUnknown, err
	}
	js, err := q.js(ctx)
	if err != nil {
		return StateUnknown, err
	}
	now, err := q.look.info(ctx, js, id)
	if err != nil {
		return StateUnknown, err
	}
	if now.State != StateWaiting && now.State != StateScheduled {
		return now.State, fmt.Errorf("%w: task %q is %s", ErrNotWaiting, id, now.State)
	}
	copy, err := q.look.lastWaiting(ctx, js, id)
	if err != nil {
		return StateUnknown, err
	}
	if copy != nil {
		s, err := js.Stream(ctx, q.look.stream)
		if err != nil {
			return StateUnknown, err
		}
		err = s.DeleteMsg(ctx, copy.Sequence)
		if err == nil {
			return now.State, nil
		}
		if !errors.Is(err, jetstream.ErrMsgNotFound) {
			return StateUnknown, fmt.Errorf("tasks: delete task %q: %w", id, err)
		}
	}
	// Taken meanwhile: where is it now?
	if now, err = q.look.info(ctx, js, id); err != nil {
		return StateUnknown, err
	}
	return now.State, fmt.Errorf("%w: task %q is %s", ErrNotWaiting, id, now.State)
}
