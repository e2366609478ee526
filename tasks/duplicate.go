package tasks

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/corral-go/corral/connection"
	"github.com/corral-go/corral/internal/backoff"
	"github.com/corral-go/corral/internal/jsapi"
)

// ErrDuplicate is matched by the *DuplicateError Enqueued.Wait returns.
var ErrDuplicate = errors.New("tasks: a task with this id is in the queue")

// DuplicateError is a task not enqueued because the queue has one with
// its id: waiting, scheduled, running, or completed within KeepCompleted.
// A task that failed for good is no duplicate: enqueued again under its
// id, it runs again as the same task. The caller may ignore the error:
// the task it asked for is there.
type DuplicateError struct {
	Queue, ID string
	// State is the other task's: StateWaiting, StateScheduled,
	// StateRunning or StateCompleted.
	State State
	// At is when a scheduled task runs.
	At time.Time
	// Worker and Process are who runs a running task, or ran a completed
	// one.
	Worker, Process string
}

// Error says which task, and where it is.
func (e *DuplicateError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "tasks: queue %s: task %q is %s", e.Queue, e.ID, e.State)
	switch {
	case !e.At.IsZero():
		fmt.Fprintf(&b, " for %s", e.At.Format(time.RFC3339Nano))
	case e.Worker != "":
		fmt.Fprintf(&b, " by worker %s of %s", e.Worker, e.Process)
	}
	return b.String()
}

// Is reports whether target is ErrDuplicate.
func (e *DuplicateError) Is(target error) bool { return target == ErrDuplicate }

// Enqueued is a task on its way into its queue, as corral.Client's
// EnqueueTask hands it to the buffered publisher. Wait says whether it
// was enqueued, or is a duplicate.
type Enqueued struct {
	id, nonce string
	msg       *nats.Msg // as NewMessage made it, to send again
	look      lookup
	src       connection.Source
	api       connection.JetStreamAPI
	stored    func(context.Context) (*jetstream.PubAck, error)

	mu   sync.Mutex
	done bool
	err  error
}

// Track follows m, a message of NewMessage for queue, configured by cfg,
// into the queue: stored is the publisher's wait for its ack (a Future's
// Wait), and src the connection to look at the queue with.
func Track(queue string, cfg Config, m *nats.Msg, src connection.Source, stored func(context.Context) (*jetstream.PubAck, error)) *Enqueued {
	cfg = cfg.withDefaults(queue)
	return &Enqueued{id: m.Header.Get(TaskIDHeader), nonce: m.Header.Get(nonceHeader), msg: m,
		look: lookup{names: newNames(queue, cfg), stream: cfg.Stream}, src: src, api: cfg.JetStreamAPI, stored: stored}
}

// ID is the task's id: the one given (WithID), or the NUID it was given.
func (e *Enqueued) ID() string { return e.id }

// Wait waits until the queue's stream has stored the task, and returns
// nil; or until the queue is known to have a task with its id, and
// returns a *DuplicateError (matching ErrDuplicate) that says where that
// task is; or returns the publisher's error, or ctx's. A duplicate found
// only once the task was stored (the other running or completed) is
// removed from the queue before it runs. Once it has answered nil or a
// duplicate, Wait answers the same again.
func (e *Enqueued) Wait(ctx context.Context) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.done {
		return e.err
	}
	ack, err := e.stored(ctx)
	if err != nil && !jsapi.WrongLastSequence(err) {
		return err
	}
	nc, _, cerr := e.src.Conn(ctx)
	if cerr != nil {
		return cerr
	}
	js, cerr := e.api.New(nc)
	if cerr != nil {
		return cerr
	}
	for tries := 1; ; tries++ {
		if err == nil {
			err = e.afterStored(ctx, js, ack.Sequence)
			break
		}
		var stale bool
		if stale, err = e.afterRefused(ctx, js, err); !stale || tries == staleTries {
			break
		}
		// The copy that refused it was claimed, and its ack is on its way.
		_ = backoff.Wait(ctx, staleWait)
		ack, err = js.PublishMsg(ctx, e.msg)
		if err != nil && !jsapi.WrongLastSequence(err) {
			return err
		}
	}
	if err == nil || errors.Is(err, ErrDuplicate) {
		e.done, e.err = true, err
	}
	return err
}

// A copy that was claimed stays in the queue until its ack is taken in:
// an enqueue of its id refused by it is sent again, staleTries times at
// most, staleWait apart.
const (
	staleTries = 50
	staleWait  = 20 * time.Millisecond
)

// afterStored checks a task stored at seq against the held stream: a
// task with its id running or completed makes it a duplicate, removed
// from the queue (were the removal lost, its claim drops it).
func (e *Enqueued) afterStored(ctx context.Context, js jetstream.JetStream, seq uint64) error {
	dup, err := e.held(ctx, js)
	if err != nil || dup == nil {
		return err
	}
	if s, serr := js.Stream(ctx, e.look.stream); serr == nil {
		_ = s.DeleteMsg(ctx, seq)
	}
	return dup
}

// afterRefused finds out why the queue's stream refused the task: a copy
// or schedule of its id waits (its own, when a re-send was refused after
// the first was stored), or waited and was taken meanwhile. stale says
// that the copy that refused it was claimed already: sent again once its
// ack is taken in, the task is stored.
func (e *Enqueued) afterRefused(ctx context.Context, js jetstream.JetStream, refusal error) (stale bool, err error) {
	last, err := e.look.lastWaiting(ctx, js, e.id)
	switch {
	case err != nil:
		return false, err
	case last != nil && last.Header.Get(nonceHeader) == e.nonce:
		// Stored by a send whose answer was lost: checked as stored.
		return false, e.afterStored(ctx, js, last.Sequence)
	case last != nil:
		if e.claimed(ctx, js, last) {
			// Claimed: running or ended, the record says; a task that
			// ended for good is enqueued again once the copy's ack is in.
			switch dup, err := e.held(ctx, js); {
			case err != nil:
				return false, err
			case dup != nil:
				return false, dup
			}
			return true, refusal
		}
		i := e.look.waitingInfo(e.id, last)
		return false, &DuplicateError{Queue: i.Queue, ID: e.id, State: i.State, At: i.At}
	}
	dup, err := e.held(ctx, js)
	switch {
	case err != nil:
		return false, err
	case dup != nil:
		return false, dup
	case e.ran(ctx, js):
		return false, nil
	}
	return true, refusal // taken meanwhile: its record may be on its way
}

// claimed reports whether copy, a copy of e's task waiting, was claimed
// already: the held stream has a record of its enqueue at its attempt or
// later.
func (e *Enqueued) claimed(ctx context.Context, js jetstream.JetStream, copy *jetstream.RawStreamMsg) bool {
	rec, ok, err := e.lastRecord(ctx, js)
	if err != nil || !ok || copy.Header.Get(jetstream.ScheduleHeader) != "" {
		return false
	}
	t := parseTask(copy.Header, copy.Data, copy.Sequence)
	return rec.nonce == t.nonce && rec.attempt >= t.attempt
}

// held returns a *DuplicateError for the task with e's id that the held
// stream knows running or completed, if it is another's than e's.
func (e *Enqueued) held(ctx context.Context, js jetstream.JetStream) (*DuplicateError, error) {
	rec, ok, err := e.lastRecord(ctx, js)
	if err != nil || !ok || rec.nonce == e.nonce || rec.state == stateFailed || rec.state == stateCancelled {
		return nil, err // a task that failed for good, or was cancelled, is retried
	}
	i := e.look.heldInfo(rec)
	return &DuplicateError{Queue: i.Queue, ID: e.id, State: i.State, Worker: i.Worker, Process: i.Process}, nil
}

// lastRecord is the held stream's last word on e's task (see
// lookup.lastRecord).
func (e *Enqueued) lastRecord(ctx context.Context, js jetstream.JetStream) (record, bool, error) {
	held, err := e.look.heldStream(ctx, js)
	if err != nil {
		return record{}, false, err
	}
	return e.look.lastRecord(ctx, held, e.id)
}

// ran reports whether the held stream's last record of e's id is e's own:
// stored, it was taken from the queue.
func (e *Enqueued) ran(ctx context.Context, js jetstream.JetStream) bool {
	rec, ok, err := e.lastRecord(ctx, js)
	return err == nil && ok && rec.nonce == e.nonce
}
