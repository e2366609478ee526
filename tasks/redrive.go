package tasks

import (
	"context"
	"errors"
	"fmt"

	"github.com/nats-io/nats.go/jetstream"
)

// DeadLetters returns a page of the queue's dead letters, oldest first:
// the tasks that failed MaxFailures times, as their dead letters on the
// queue's DeadLetter subject say (State StateFailed, with their last
// error, attempt and failures; Since is when the dead letter was stored).
// A queue without a DeadLetter subject has none. Pages go as List's do.
func (q *Queue) DeadLetters(ctx context.Context, opts ListOptions) (Page, error) {
	limit, err := pageLimit(opts.Limit)
	if err != nil || q.cfg.DeadLetter == "" {
		return Page{}, err
	}
	js, err := q.js(ctx)
	if err != nil {
		return Page{}, err
	}
	dl, err := q.deadLetterStream(ctx, js)
	if err != nil || dl == nil {
		return Page{}, err
	}
	var page Page
	var last uint64
	cursors := []*cursor{{subject: q.cfg.DeadLetter}}
	for next := opts.After + 1; ; {
		m, err := nextOf(ctx, dl, cursors, next)
		if err != nil || m == nil {
			return page, err
		}
		next = m.Sequence + 1
		if len(page.Tasks) == limit {
			page.Next = last
			return page, nil
		}
		page.Tasks = append(page.Tasks, q.deadLetterInfo(m))
		last = m.Sequence
	}
}

// Retry enqueues the dead-lettered task id again, under its id, with its
// data and headers, and then removes its dead letter: it runs again as
// the same task, its attempts going on and its failures counted afresh.
// A task enqueued again already (waiting, running, or since completed)
// is not enqueued twice: its dead letter is removed all the same. It
// returns ErrTaskNotFound when the queue has no dead letter of id.
func (q *Queue) Retry(ctx context.Context, id string) error {
	if err := checkLookupID(id); err != nil {
		return err
	}
	found := false
	_, err := q.redrive(ctx, func(i Info) bool {
		if i.ID != id || found {
			return false
		}
		found = true
		return true
	})
	if err == nil && !found {
		err = fmt.Errorf("%w: no dead letter of %q", ErrTaskNotFound, id)
	}
	return err
}

// RetryAll retries, as Retry does, every dead letter that match accepts
// (nil: all of them), oldest first, and returns how many it retried. It
// stops at the first that fails, having retried those before.
func (q *Queue) RetryAll(ctx context.Context, match func(Info) bool) (int, error) {
	if match == nil {
		match = func(Info) bool { return true }
	}
	return q.redrive(ctx, match)
}

// redrive retries the dead letters match accepts, in one pass.
func (q *Queue) redrive(ctx context.Context, match func(Info) bool) (int, error) {
	if q.cfg.DeadLetter == "" {
		return 0, nil
	}
	js, err := q.js(ctx)
	if err != nil {
		return 0, err
	}
	dl, err := q.deadLetterStream(ctx, js)
	if err != nil || dl == nil {
		return 0, err
	}
	n := 0
	cursors := []*cursor{{subject: q.cfg.DeadLetter}}
	for next := uint64(1); ; {
		m, err := nextOf(ctx, dl, cursors, next)
		if err != nil || m == nil {
			return n, err
		}
		next = m.Sequence + 1
		if !match(q.deadLetterInfo(m)) {
			continue
		}
		if err := q.enqueueAgain(ctx, js, m); err != nil {
			return n, err
		}
		if err := dl.DeleteMsg(ctx, m.Sequence); err != nil && !errors.Is(err, jetstream.ErrMsgNotFound) {
			return n, fmt.Errorf("tasks: remove the dead letter of %q: %w", q.deadLetterInfo(m).ID, err)
		}
		n++
	}
}

// enqueueAgain enqueues the task of dead letter m under its id, as
// EnqueueTask does; a task of that id already in the queue is not
// enqueued twice.
func (q *Queue) enqueueAgain(ctx context.Context, js jetstream.JetStream, m *jetstream.RawStreamMsg) error {
	t := parseTask(m.Header, m.Data, m.Sequence)
	opts := []Option{WithID(t.id)}
	if t.header != nil {
		opts = append(opts, WithHeader(t.header))
	}
	msg, err := NewMessage(q.look.names.queue, t.data, js.Conn().MaxPayload(), opts...)
	if err != nil {
		return fmt.Errorf("tasks: retry %q: %w", t.id, err)
	}
	ack, perr := js.PublishMsg(ctx, msg)
	err = Track(q.look.names.queue, q.cfg, msg, q.src, func(context.Context) (*jetstream.PubAck, error) { return ack, perr }).Wait(ctx)
	if err != nil && !errors.Is(err, ErrDuplicate) {
		return fmt.Errorf("tasks: retry %q: %w", t.id, err)
	}
	return nil
}

// deadLetterInfo is Info from a dead letter.
func (q *Queue) deadLetterInfo(m *jetstream.RawStreamMsg) Info {
	t := parseTask(m.Header, m.Data, m.Sequence)
	return Info{Queue: q.look.names.queue, ID: t.id, State: StateFailed, Since: m.Time, Attempt: t.attempt,
		Failures: t.failures, Err: m.Header.Get(lastErrorHeader)}
}

// deadLetterStream is the stream that stores the queue's dead letters,
// nil when there is none yet.
func (q *Queue) deadLetterStream(ctx context.Context, js jetstream.JetStream) (jetstream.Stream, error) {
	name := q.cfg.DeadLetterStream
	if name == "" {
		var err error
		if name, err = js.StreamNameBySubject(ctx, q.cfg.DeadLetter); err != nil {
			if errors.Is(err, jetstream.ErrStreamNotFound) {
				return nil, nil
			}
			return nil, fmt.Errorf("tasks: the stream of %s: %w", q.cfg.DeadLetter, err)
		}
	}
	s, err := js.Stream(ctx, name)
	if errors.Is(err, jetstream.ErrStreamNotFound) {
		return nil, nil
	}
	return s, err
}
