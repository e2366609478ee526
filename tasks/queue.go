package tasks

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/corral-go/corral/connection"
	"github.com/corral-go/corral/internal/jsapi"
)

// Queue is a task queue seen from outside its workers: what a task with a
// given id is doing, and how it ended. corral.Client's Tasks returns the
// Queue of a configured queue.
type Queue struct {
	look lookup
	src  connection.Source
	cfg  Config // with its defaults
}

// NewQueue returns queue, configured by cfg, as seen on the connections
// of src.
func NewQueue(queue string, cfg Config, src connection.Source) *Queue {
	cfg = cfg.withDefaults(queue)
	return &Queue{look: lookup{names: newNames(queue, cfg), stream: cfg.Stream}, src: src, cfg: cfg}
}

// Info returns what the queue's streams say of the task id: waiting,
// scheduled, running, or how it ended (with its result or its last error)
// within KeepCompleted (KeepResults with a result). A task moving from
// one stream to the other shows either state. It returns ErrTaskNotFound
// for an id the queue does not know, and ErrInvalidTaskID for one it
// could not hold.
func (q *Queue) Info(ctx context.Context, id string) (Info, error) {
	if err := checkLookupID(id); err != nil {
		return Info{}, err
	}
	js, err := q.js(ctx)
	if err != nil {
		return Info{}, err
	}
	return q.look.info(ctx, js, id)
}

// Wait waits until the task id ends, completed or failed for good, and
// returns its Info then; at once for a task that ended already. A task
// enqueued again after it ended (a retry of one that failed) is waited
// for anew. It returns ErrTaskNotFound for an id the queue does not know
// now, and ctx's error once ctx ends.
func (q *Queue) Wait(ctx context.Context, id string) (Info, error) {
	if err := checkLookupID(id); err != nil {
		return Info{}, err
	}
	js, err := q.js(ctx)
	if err != nil {
		return Info{}, err
	}
	now, err := q.look.info(ctx, js, id)
	if err != nil || now.finished() {
		return now, err
	}
	held, err := q.heldStream(ctx, js)
	if err != nil {
		return Info{}, err
	}
	// The task's last record, then every change: a tombstone written
	// since its state was read ends the wait. A consumer of its own, made
	// and deleted here, so that nothing outlives ctx.
	cons, err := held.CreateConsumer(ctx, jetstream.ConsumerConfig{FilterSubject: q.look.names.heldByTask(id),
		DeliverPolicy: jetstream.DeliverLastPerSubjectPolicy, AckPolicy: jetstream.AckNonePolicy,
		InactiveThreshold: time.Minute, MemoryStorage: true})
	if err != nil {
		return Info{}, err
	}
	defer func() {
		dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		_ = held.DeleteConsumer(dctx, cons.CachedInfo().Name)
	}()
	var fresh unheard
	for {
		m, err := cons.Next(jetstream.FetchContext(ctx))
		switch {
		case ctx.Err() != nil:
			return Info{}, ctx.Err()
		case errors.Is(err, jetstream.ErrNoMessages), errors.Is(err, nats.ErrTimeout):
			continue // no change while the request waited
		case fresh.again(ctx, err):
			continue
		case err != nil:
			return Info{}, fmt.Errorf("tasks: wait for task %q: %w", id, err)
		}
		fresh.heard()
		meta, merr := m.Metadata()
		if merr != nil {
			continue
		}
		rec := parseRecord(&jetstream.RawStreamMsg{Subject: m.Subject(), Sequence: meta.Sequence.Stream, Header: m.Headers(),
			Data: m.Data(), Time: meta.Timestamp})
		if rec.marker() {
			if _, live, err := liveRecord(ctx, held, q.look.names, id); err != nil || live {
				continue // cancelled while it runs: its run's end ends the wait
			}
		}
		if i := q.look.heldInfo(rec); i.finished() && i.Since.After(now.Since) {
			return i, nil
		}
	}
}

// Cancel cancels the task id and returns the state it found it in. A
// task waiting or scheduled never runs: its copy or schedule is deleted,
// and any copy of it a worker takes (a put-back, a late schedule, a copy
// enqueued on the queue's Subject, where Info cannot look it up) is
// dropped; a copy on the Subject taken in the milliseconds before the
// worker hears of the cancel is cancelled as it runs. A running task's
// ctx is cancelled, with the cause ErrCancelled, as soon as its worker
// hears of it (milliseconds: every worker watches the queue's cancels),
// and the task ends as cancelled, or as completed if its handler returns
// nil all the same: Info says which. A task that ended already is left as
// it is: Cancel returns its state and ErrFinished. The cancel is remembered for
// KeepCompleted, and enqueued again under its id the task runs again. An
// id the queue's streams do not show is cancelled all the same, and
// StateUnknown returned.
func (q *Queue) Cancel(ctx context.Context, id string) (State, error) {
	if err := checkLookupID(id); err != nil {
		return StateUnknown, err
	}
	js, err := q.js(ctx)
	if err != nil {
		return StateUnknown, err
	}
	now, err := q.look.info(ctx, js, id)
	switch {
	case errors.Is(err, ErrTaskNotFound):
		now.State = StateUnknown
	case err != nil:
		return StateUnknown, err
	case now.finished():
		return now.State, ErrFinished
	}
	copy, err := q.look.lastWaiting(ctx, js, id)
	if err != nil {
		return StateUnknown, err
	}
	// Copies stored up to here are the cancelled task's; one enqueued
	// after the cancel is the task enqueued again, and runs.
	queueStream, err := js.Stream(ctx, q.look.stream)
	if err != nil {
		return StateUnknown, err
	}
	qi, err := queueStream.Info(ctx)
	if err != nil {
		return StateUnknown, err
	}
	nonce := ""
	if copy != nil {
		nonce = copy.Header.Get(nonceHeader)
	} else if held, err := q.look.heldStream(ctx, js); err == nil {
		if rec, ok, _ := q.look.lastRecord(ctx, held, id); ok {
			nonce = rec.nonce
		}
	}
	// The marker first: from then on no claim of the task is stored, so a
	// copy taken before it is deleted is dropped. Before any worker ran,
	// the held stream is declared as a worker would.
	marker := q.look.names.cancelMsg(id, nonce, qi.State.LastSeq, q.cfg.KeepCompleted)
	_, err = js.PublishMsg(ctx, marker)
	if jsapi.StreamMissing(err) {
		if err = declareHeld(ctx, js, q.cfg, q.look.names); err == nil {
			_, err = js.PublishMsg(ctx, marker)
		}
	}
	if err != nil {
		return StateUnknown, fmt.Errorf("tasks: cancel task %q: %w", id, err)
	}
	if err := q.deleteWaiting(ctx, js, id, copy, nonce, qi.State.LastSeq); err != nil {
		return now.State, fmt.Errorf("tasks: cancel task %q: %w", id, err)
	}
	return now.State, nil
}

// deleteWaiting deletes task id's copy or schedule waiting, first, and
// what takes its place meanwhile (a schedule that fires as it is deleted
// leaves a copy), as long as it is the cancelled enqueue's (nonce) or was
// stored by last: a copy of another, stored after the cancel, is the task
// enqueued again.
func (q *Queue) deleteWaiting(ctx context.Context, js jetstream.JetStream, id string, copy *jetstream.RawStreamMsg, nonce string, last uint64) error {
	s, err := js.Stream(ctx, q.look.stream)
	if err != nil {
		return err
	}
	cancelled := func(m *jetstream.RawStreamMsg) bool {
		return m != nil && (m.Sequence <= last || m.Header.Get(nonceHeader) == nonce)
	}
	var derr error
	for range 3 {
		if !cancelled(copy) {
			return nil
		}
		// A delete refused because the copy went meanwhile (its claim's
		// ack taken in) is no failure; nats.go gives the server's reason
		// as text alone, so what is left tells.
		derr = s.DeleteMsg(ctx, copy.Sequence)
		if copy, err = q.look.lastWaiting(ctx, js, id); err != nil {
			return err
		}
	}
	if !cancelled(copy) {
		return nil
	}
	return fmt.Errorf("delete its copy at sequence %d: %w", copy.Sequence, derr)
}

// checkLookupID checks an id to look a task up by: as checkID, but one in
// the queue's reserved space (a periodic schedule's tick) is taken.
func checkLookupID(id string) error {
	if err := checkID(id); err != nil && !errors.Is(err, ErrReservedMsgID) {
		return err
	}
	return nil
}

// heldStream is the queue's held stream, once a worker has declared it:
// a task enqueued before any worker ran is waited for until one does.
func (q *Queue) heldStream(ctx context.Context, js jetstream.JetStream) (jetstream.Stream, error) {
	for {
		s, err := js.Stream(ctx, q.look.names.heldStream)
		if !errors.Is(err, jetstream.ErrStreamNotFound) {
			return s, err
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(time.Second): // looked for again until a worker declares it
		}
	}
}

// js is JetStream on the current connection.
func (q *Queue) js(ctx context.Context) (jetstream.JetStream, error) {
	nc, _, err := q.src.Conn(ctx)
	if err != nil {
		return nil, err
	}
	return q.cfg.JetStreamAPI.New(nc)
}
