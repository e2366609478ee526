package tasks

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/corral-go/corral/internal/jsapi"
)

// ErrTaskNotFound is returned by Queue.Info and Queue.Wait for an id the
// queue does not know: never enqueued, or finished longer ago than
// KeepCompleted (KeepResults with a result).
var ErrTaskNotFound = errors.New("tasks: no task with this id in the queue")

// Info is what a queue's streams say of a task.
type Info struct {
	Queue, ID string
	State     State
	// Since is when the task entered its state, by the server's clock:
	// when its copy or schedule was stored, its run claimed (started), or
	// its tombstone written (ended).
	Since time.Time
	// At is when a scheduled task runs.
	At time.Time
	// Attempt counts the times it went back to the queue, Failures its
	// failed runs.
	Attempt, Failures int
	// Worker and Process are who runs it, or ran it last.
	Worker, Process string
	// Progress is the latest progress its runs reported (Task.Progress),
	// nil without one.
	Progress []byte
	// Result is a completed task's result (Task.SetResult), nil without
	// one; Err a failed task's last error, at most MaxErrorLen bytes.
	Result []byte
	Err    string
}

// finished reports whether the task is over for good: completed, failed
// or cancelled.
func (i Info) finished() bool {
	return i.State == StateCompleted || i.State == StateFailed || i.State == StateCancelled
}

// lookup reads what a queue's streams hold of tasks.
type lookup struct {
	names  names
	stream string // the queue's
}

// info is what the queue's streams say of task id: the newer of its last
// record or tombstone and its copy or schedule waiting, with its latest
// progress.
func (l lookup) info(ctx context.Context, js jetstream.JetStream, id string) (Info, error) {
	held, err := l.heldStream(ctx, js)
	if err != nil {
		return Info{}, err
	}
	rec, ok, err := l.lastRecord(ctx, held, id)
	if err != nil {
		return Info{}, err
	}
	copy, err := l.lastWaiting(ctx, js, id)
	if err != nil {
		return Info{}, err
	}
	var i Info
	switch {
	case copy != nil && (!ok || copy.Time.After(rec.stored)):
		i = l.waitingInfo(id, copy)
	case ok:
		i = l.heldInfo(rec)
	default:
		return Info{}, ErrTaskNotFound
	}
	if held != nil {
		if m, err := held.GetLastMsgForSubject(ctx, l.names.progress(id)); err == nil {
			i.Progress = m.Data
		}
	}
	return i, nil
}

// heldInfo is Info from the task's record or tombstone.
func (l lookup) heldInfo(rec record) Info {
	i := Info{Queue: l.names.queue, ID: rec.id, Since: rec.stored, Attempt: rec.attempt, Failures: rec.failures,
		Worker: rec.worker, Process: rec.process}
	switch rec.state {
	case stateHeld:
		i.State = StateRunning
	case stateCancelled:
		i.State = StateCancelled
	case stateDone:
		i.State = StateCompleted
		if len(rec.data) > 0 {
			i.Result = rec.data
		}
	default:
		i.State, i.Err = StateFailed, rec.lastErr
	}
	return i
}

// waitingInfo is Info from the task's copy or schedule in the queue.
func (l lookup) waitingInfo(id string, m *jetstream.RawStreamMsg) Info {
	t := parseTask(m.Header, m.Data, m.Sequence)
	i := Info{Queue: l.names.queue, ID: id, State: StateWaiting, Since: m.Time, Attempt: t.attempt, Failures: t.failures}
	if s := m.Header.Get(jetstream.ScheduleHeader); s != "" {
		i.State = StateScheduled
		i.At, _ = time.Parse(time.RFC3339Nano, strings.TrimPrefix(s, "@at "))
	} else if nb, err := strconv.ParseInt(m.Header.Get(NotBeforeHeader), 10, 64); err == nil {
		i.State, i.At = StateScheduled, time.Unix(0, nb) // an earlier version's delayed put-back
	}
	return i
}

// heldStream is the queue's held stream, nil when no worker has
// declared it (none ran).
func (l lookup) heldStream(ctx context.Context, js jetstream.JetStream) (jetstream.Stream, error) {
	s, err := jsapi.Ask(ctx, func(ctx context.Context) (jetstream.Stream, error) { return js.Stream(ctx, l.names.heldStream) })
	if errors.Is(err, jetstream.ErrStreamNotFound) {
		return nil, nil
	}
	return s, err
}

// lastRecord is the last word of held (nil: none) on task id: its record
// or tombstone, or, behind a cancel marker, the record of a run that still
// holds it (its handler not yet returned): until the run ends, the task
// runs.
func (l lookup) lastRecord(ctx context.Context, held jetstream.Stream, id string) (record, bool, error) {
	if held == nil {
		return record{}, false, nil
	}
	// A replicated stream just made, or electing its leader, leaves some
	// reads unanswered: each is asked again, not waited for all of ctx.
	m, err := jsapi.Ask(ctx, func(ctx context.Context) (*jetstream.RawStreamMsg, error) {
		return held.GetLastMsgForSubject(ctx, l.names.heldByTask(id))
	})
	if errors.Is(err, jetstream.ErrMsgNotFound) {
		return record{}, false, nil
	}
	if err != nil {
		return record{}, false, err
	}
	rec := parseRecord(m)
	if rec.marker() {
		if live, ok, err := liveRecord(ctx, held, l.names, id); err == nil && ok {
			return live, true, nil
		}
	}
	return rec, true, nil
}

// liveRecord returns the record of a run that still holds task id, if
// any: a cancel marker written after it hides it from the last message of
// held.<task>.*.
func liveRecord(ctx context.Context, s jetstream.Stream, n names, id string) (record, bool, error) {
	info, err := s.Info(ctx, jetstream.WithSubjectFilter(n.heldByTask(id)))
	if err != nil {
		return record{}, false, err
	}
	for subj := range info.State.Subjects {
		if subj == n.cancel(id) {
			continue
		}
		m, err := s.GetLastMsgForSubject(ctx, subj)
		if errors.Is(err, jetstream.ErrMsgNotFound) {
			continue
		}
		if err != nil {
			return record{}, false, err
		}
		if rec := parseRecord(m); rec.state == stateHeld {
			return rec, true, nil
		}
	}
	return record{}, false, nil
}

// lastWaiting is the queue stream's copy or schedule of task id waiting,
// nil if none.
func (l lookup) lastWaiting(ctx context.Context, js jetstream.JetStream, id string) (*jetstream.RawStreamMsg, error) {
	s, err := jsapi.Ask(ctx, func(ctx context.Context) (jetstream.Stream, error) { return js.Stream(ctx, l.stream) })
	if err != nil {
		return nil, err
	}
	m, err := jsapi.Ask(ctx, func(ctx context.Context) (*jetstream.RawStreamMsg, error) {
		return s.GetLastMsgForSubject(ctx, l.names.waitingByTask(id))
	})
	if errors.Is(err, jetstream.ErrMsgNotFound) {
		return nil, nil
	}
	return m, err
}
