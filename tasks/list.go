package tasks

import (
	"context"
	"errors"
	"fmt"

	"github.com/nats-io/nats.go/jetstream"
)

// Bounds of a page of Queue.List.
const (
	DefaultPageSize = 100
	MaxPageSize     = 1000
)

// ListOptions chooses a page of a queue's tasks.
type ListOptions struct {
	// State is which tasks: StateWaiting, StateScheduled, StateRunning,
	// StateCompleted, StateFailed or StateCancelled.
	State State
	// After is where the page begins: the Next of the page before it; 0
	// for the first page.
	After uint64
	// Limit is the most tasks the page holds. Default DefaultPageSize, at
	// most MaxPageSize.
	Limit int
}

// Page is one page of a listing.
type Page struct {
	Tasks []Info
	// Next is the After of the next page; 0 when no task is left.
	Next uint64
}

// List returns a page of the queue's tasks in one state, in the order the
// queue stored them (their copies, schedules or records), reading no more
// of its streams than the page needs: a listing of any length goes page
// by page, each Next the After of the next. Waiting tasks include those a
// worker has taken and not yet claimed (see Config.ClaimAfter); ended
// ones are those the queue still keeps (KeepCompleted, KeepResults). A
// task that changes state between two pages may show in both, or in
// neither.
func (q *Queue) List(ctx context.Context, opts ListOptions) (Page, error) {
	limit, err := pageLimit(opts.Limit)
	if err != nil {
		return Page{}, err
	}
	js, err := q.js(ctx)
	if err != nil {
		return Page{}, err
	}
	switch opts.State {
	case StateWaiting, StateScheduled:
		return q.listQueued(ctx, js, opts.State, opts.After, limit)
	case StateRunning, StateCompleted, StateFailed, StateCancelled:
		return q.listHeld(ctx, js, opts.State, opts.After, limit)
	}
	return Page{}, fmt.Errorf("tasks: list %q: the states are waiting, scheduled, running, completed, failed and cancelled", opts.State)
}

// pageLimit is the size of a page of limit tasks asked for.
func pageLimit(limit int) (int, error) {
	switch {
	case limit == 0:
		return DefaultPageSize, nil
	case limit < 0 || limit > MaxPageSize:
		return 0, fmt.Errorf("tasks: a page of %d tasks: from 1 to %d", limit, MaxPageSize)
	}
	return limit, nil
}

// listQueued pages through the copies (waiting) or schedules (scheduled)
// of the queue's stream. A work queue takes no consumer that overlaps its
// own, so it is read a message at a time, each the next on a subject from
// a sequence on (the server's next_by_subj).
func (q *Queue) listQueued(ctx context.Context, js jetstream.JetStream, state State, after uint64, limit int) (Page, error) {
	s, err := js.Stream(ctx, q.cfg.Stream)
	if err != nil {
		return Page{}, err
	}
	cursors := []*cursor{{subject: q.look.names.scheduledAll()}}
	if state == StateWaiting {
		cursors = q.waitingCursors()
	}
	var page Page
	var last uint64 // the sequence of the page's last task
	for next := after + 1; ; {
		m, err := nextOf(ctx, s, cursors, next)
		if err != nil {
			return Page{}, err
		}
		if m == nil {
			return page, nil
		}
		next = m.Sequence + 1
		if len(page.Tasks) == limit {
			page.Next = last // one more is left
			return page, nil
		}
		t := parseTask(m.Header, m.Data, m.Sequence)
		page.Tasks = append(page.Tasks, q.look.waitingInfo(t.id, m))
		last = m.Sequence
	}
}

// waitingCursors are cursors on the subjects of the copies waiting: each
// slot's, and the queue's Subject (schedules wait on subjects of their
// own).
func (q *Queue) waitingCursors() []*cursor {
	cursors := []*cursor{{subject: q.cfg.Subject}}
	for s := range slot(slots) {
		cursors = append(cursors, &cursor{subject: fmt.Sprintf(slotTmpl, q.look.names.queue, s)})
	}
	return cursors
}

// cursor is where a listing is on one subject of a stream: the message on
// it read ahead, the first at or after the sequence it was asked for.
type cursor struct {
	subject string
	read    bool                    // asked at least once
	msg     *jetstream.RawStreamMsg // nil: none from there on
}

// nextOf returns the message of s stored first at or after seq on any of
// the cursors' subjects, or nil when there is none. seq never goes back
// from one call to the next: a cursor's message read ahead stands until
// seq passes it, and a cursor that found none finds none later in this
// listing.
func nextOf(ctx context.Context, s jetstream.Stream, cursors []*cursor, seq uint64) (*jetstream.RawStreamMsg, error) {
	var first *jetstream.RawStreamMsg
	for _, c := range cursors {
		if !c.read || c.msg != nil && c.msg.Sequence < seq {
			m, err := s.GetMsg(ctx, seq, jetstream.WithGetMsgSubject(c.subject))
			switch {
			case errors.Is(err, jetstream.ErrMsgNotFound):
				m = nil
			case err != nil:
				return nil, err
			}
			c.read, c.msg = true, m
		}
		if c.msg != nil && (first == nil || c.msg.Sequence < first.Sequence) {
			first = c.msg
		}
	}
	return first, nil
}

// listHeld pages through the held stream's records and tombstones in
// state, with each running task's latest progress.
func (q *Queue) listHeld(ctx context.Context, js jetstream.JetStream, state State, after uint64, limit int) (Page, error) {
	held, err := q.look.heldStream(ctx, js)
	if err != nil || held == nil {
		return Page{}, err // no worker has run: nothing held
	}
	var page Page
	var last uint64 // the sequence of the page's last task
	err = scanStream(ctx, held, []string{q.look.names.heldAll()}, after+1, false, func(m *jetstream.RawStreamMsg) error {
		rec := parseRecord(m)
		i := q.look.heldInfo(rec)
		if i.State != state {
			return nil
		}
		// A record that holds a task is its last word; a tombstone of a
		// run that failed or was cancelled, or a cancel marker, may have
		// been followed by another run, or by a tombstone of the run it
		// cancelled. A completed task is not enqueued again while kept.
		if rec.state != stateHeld && rec.state != stateDone {
			if last, ok, err := q.look.lastRecord(ctx, held, rec.id); err != nil {
				return err
			} else if !ok || last.seq != rec.seq {
				return nil
			}
		}
		if len(page.Tasks) == limit {
			page.Next = last // one more is left
			return errStopScan
		}
		if state == StateRunning {
			if p, err := held.GetLastMsgForSubject(ctx, q.look.names.progress(rec.id)); err == nil {
				i.Progress = p.Data
			}
		}
		page.Tasks = append(page.Tasks, i)
		last = m.Sequence
		return nil
	})
	if err != nil {
		return Page{}, err
	}
	return page, nil
}
