package tasks

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/corral-go/corral/connection"
)

// Queue is a task queue seen from outside its workers: what a task with a
// given id is doing, and how it ended. corral.Client's Tasks returns the
// Queue of a configured queue.
type Queue struct {
	look lookup
	src  connection.Source
}

// NewQueue returns queue, configured by cfg, as seen on the connections
// of src.
func NewQueue(queue string, cfg Config, src connection.Source) *Queue {
	cfg = cfg.withDefaults(queue)
	return &Queue{look: lookup{names: newNames(queue, cfg), stream: cfg.Stream}, src: src}
}

// Info returns what the queue's streams say of the task id: waiting,
// scheduled, running, or how it ended (with its result or its last error)
// within KeepCompleted (KeepResults with a result). A task moving from
// one stream to the other shows either state. It returns ErrTaskNotFound
// for an id the queue does not know, and ErrInvalidTaskID for one it
// could not hold.
func (q *Queue) Info(ctx context.Context, id string) (Info, error) {
	if err := checkID(id); err != nil {
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
	if err := checkID(id); err != nil {
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
	// since its state was read ends the wait.
	cons, err := held.OrderedConsumer(ctx, jetstream.OrderedConsumerConfig{
		FilterSubjects: []string{q.look.names.heldByTask(id)}, DeliverPolicy: jetstream.DeliverLastPerSubjectPolicy})
	if err != nil {
		return Info{}, err
	}
	for {
		m, err := cons.Next(jetstream.FetchContext(ctx))
		switch {
		case ctx.Err() != nil:
			return Info{}, ctx.Err()
		case errors.Is(err, jetstream.ErrNoMessages), errors.Is(err, nats.ErrTimeout):
			continue // no change while the request waited
		case err != nil:
			return Info{}, fmt.Errorf("tasks: wait for task %q: %w", id, err)
		}
		meta, merr := m.Metadata()
		if merr != nil {
			continue
		}
		raw := &jetstream.RawStreamMsg{Subject: m.Subject(), Sequence: meta.Sequence.Stream, Header: m.Headers(),
			Data: m.Data(), Time: meta.Timestamp}
		if i := q.look.heldInfo(parseRecord(raw)); i.finished() && i.Since.After(now.Since) {
			return i, nil
		}
	}
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
	return jetstream.New(nc)
}
