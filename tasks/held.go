package tasks

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/corral-go/corral/internal/jsapi"
)

// task is one copy of a task: as the queue delivered it, or as its held
// record keeps it.
type task struct {
	id        string
	attempt   int
	failures  int
	notBefore time.Time
	avoid     string // a worker the task should not go back to
	data      []byte
	header    nats.Header // the task's own headers, without the protocol's
}

// record is a held record: the durable copy of a task while a worker
// holds it, or, once finished, a tombstone that outlives it for
// KeepCompleted.
type record struct {
	task
	worker string
	state  string
	seq    uint64    // the record's stream sequence: the run's fencing token
	stored time.Time // when the server stored it
}

// parseTask reads a copy of a task delivered at stream sequence seq.
func parseTask(h nats.Header, data []byte, seq uint64) task {
	t := task{id: taskID(h, seq), data: data, header: nats.Header{}}
	t.attempt, _ = strconv.Atoi(h.Get(AttemptHeader))
	t.failures, _ = strconv.Atoi(h.Get(FailuresHeader))
	if nb, err := strconv.ParseInt(h.Get(NotBeforeHeader), 10, 64); err == nil {
		t.notBefore = time.Unix(0, nb)
	}
	t.avoid = h.Get(AvoidHeader)
	for k, v := range h {
		if !protocolHeader(k) && !jsapi.ActsOnStream(k) {
			t.header[k] = v
		}
	}
	return t
}

func protocolHeader(k string) bool { return strings.HasPrefix(k, "Corral-Task-") }

// parseRecord reads a held record.
func parseRecord(m *jetstream.RawStreamMsg) record {
	return record{task: parseTask(m.Header, m.Data, m.Sequence), worker: m.Header.Get(workerHeader),
		state: m.Header.Get(stateHeader), seq: m.Sequence, stored: m.Time}
}

// message is t as a message on subject, with its protocol headers.
func (t task) message(subject string) *nats.Msg {
	m := nats.NewMsg(subject)
	m.Data = t.data
	for k, v := range t.header {
		m.Header[k] = v
	}
	m.Header.Set(TaskIDHeader, t.id)
	m.Header.Set(AttemptHeader, strconv.Itoa(t.attempt))
	if t.failures > 0 {
		m.Header.Set(FailuresHeader, strconv.Itoa(t.failures))
	}
	if !t.notBefore.IsZero() {
		m.Header.Set(NotBeforeHeader, strconv.FormatInt(t.notBefore.UnixNano(), 10))
	}
	if t.avoid != "" {
		m.Header.Set(AvoidHeader, t.avoid)
	}
	return m
}

// ledger is the queue's held stream and the queue subject tasks are put
// back on: every write of the protocol goes through it.
type ledger struct {
	js    jetstream.JetStream
	held  jetstream.Stream
	names names
	queue string        // the subject tasks are enqueued on
	keep  time.Duration // how long a tombstone is kept
	dies  func(step string) bool
}

// errDied is what a step returns after a test made the process die there.
var errDied = errors.New("the process died (a test's crash)")

// errUnsure means a claim's outcome is not known (no answer, or on a
// replicated stream a competing claim still in flight); the claimer asks
// again later rather than guess.
var errUnsure = errors.New("claim outcome unknown")

// heldError is a claim refused because task already has a record, at
// sequence seq.
type heldError struct{ seq uint64 }

func (e *heldError) Error() string { return fmt.Sprintf("task already held (record %d)", e.seq) }

// claim writes t's held record for worker, on the condition that the
// task has no record at all (held by anyone, or recently finished). It
// returns the record's sequence, a *heldError naming the record that
// exists, an error wrapping errUnsure when the claim may have been stored,
// or another error when the server refused it.
func (l *ledger) claim(ctx context.Context, t task, worker string) (uint64, error) {
	m := t.message(l.names.held(t.id, worker))
	m.Header.Set(stateHeader, stateHeld)
	m.Header.Set(workerHeader, worker)
	ack, err := publish(ctx, l.js, m, jetstream.WithExpectLastSequenceForSubject(0, l.names.heldByTask(t.id)))
	if err == nil {
		return ack.Sequence, nil
	}
	if seq, ok := lastSequence(err); ok && seq > 0 {
		return 0, &heldError{seq: seq}
	}
	if code, ok := jsapi.Code(err); ok && code != jetstream.JSErrCodeStreamWrongLastSequenceConstant {
		return 0, fmt.Errorf("claim task %s: refused: %w", t.id, err) // not stored
	}
	// No answer, or on a replicated stream a competing claim in flight.
	return 0, fmt.Errorf("%w: %w", errUnsure, err)
}

// lastSequence reads the sequence a compare-and-set found, from a single
// server's "wrong last sequence: N" (a replicated stream's 10164, a
// competing write in flight, names none).
func lastSequence(err error) (uint64, bool) {
	var apiErr *jetstream.APIError
	if !errors.As(err, &apiErr) || apiErr.ErrorCode != jetstream.JSErrCodeStreamWrongLastSequence {
		return 0, false
	}
	_, n, ok := strings.Cut(apiErr.Description, "wrong last sequence: ")
	if !ok {
		return 0, false
	}
	seq, err := strconv.ParseUint(strings.TrimSpace(n), 10, 64)
	return seq, err == nil
}

// read returns the record at seq; jetstream.ErrMsgNotFound when it has
// gone (put back, or replaced by a tombstone that expired).
func (l *ledger) read(ctx context.Context, seq uint64) (record, error) {
	m, err := l.held.GetMsg(ctx, seq)
	if err != nil {
		return record{}, err
	}
	return parseRecord(m), nil
}

// finish replaces rec with a tombstone in state, on the condition that
// rec is still the task's record: a worker whose task was put back by
// the recoverer finds ErrFenced.
func (l *ledger) finish(ctx context.Context, rec record, state string, cause error) error {
	m := nats.NewMsg(l.names.held(rec.id, rec.worker))
	m.Header.Set(TaskIDHeader, rec.id)
	m.Header.Set(AttemptHeader, strconv.Itoa(rec.attempt))
	m.Header.Set(stateHeader, state)
	m.Header.Set(workerHeader, rec.worker)
	if cause != nil {
		m.Header.Set(lastErrorHeader, cause.Error())
	}
	_, err := publish(ctx, l.js, m, jetstream.WithExpectLastSequencePerSubject(rec.seq), jetstream.WithMsgTTL(l.keep))
	if !jsapi.WrongLastSequence(err) {
		return err
	}
	// An earlier try whose answer was lost may have written it: then the
	// subject holds this very tombstone.
	if last, lerr := l.held.GetLastMsgForSubject(ctx, m.Subject); lerr == nil {
		if h := last.Header; h.Get(stateHeader) == state && h.Get(AttemptHeader) == m.Header.Get(AttemptHeader) {
			return nil
		}
	}
	return fmt.Errorf("%w: %w", ErrFenced, err)
}

// putBack enqueues rec's task again as next (its next attempt), then
// removes rec. The task is in the queue before its record goes, so a
// crash in between leaves a copy that claimers recognise as put back (its
// attempt is above the record's), never no copy at all; the Msg-Id makes
// a second put-back of the same attempt (a retry, or the holder and the
// recoverer at once) one message. It returns an error wrapping
// errRecordGone when rec had gone already.
func (l *ledger) putBack(ctx context.Context, rec record, next task) error {
	m := next.message(l.queue)
	m.Header.Set(jetstream.MsgIDHeader, putBackID(rec.id, next.attempt))
	if _, err := publish(ctx, l.js, m); err != nil {
		return fmt.Errorf("put task %s back: %w", rec.id, err)
	}
	if l.dies(stepPutBack) {
		return fmt.Errorf("put task %s back: %w", rec.id, errDied)
	}
	if err := l.held.DeleteMsg(ctx, rec.seq); err != nil {
		// nats.go gives the server's reason as text only: look instead.
		if _, gerr := l.held.GetMsg(ctx, rec.seq); errors.Is(gerr, jetstream.ErrMsgNotFound) {
			return fmt.Errorf("%w: task %s", errRecordGone, rec.id)
		}
		return fmt.Errorf("remove task %s's record: %w", rec.id, err)
	}
	return nil
}

// errRecordGone is a put-back that found the record removed already: by
// an earlier try whose answer was lost, or by the holder and the
// recoverer both. The task is in the queue once either way (the put-back
// ids are the same).
var errRecordGone = errors.New("the record was removed already")

// putBackID is the Msg-Id of the put-back of task id at attempt: the same
// for every writer, and in the queue's reserved space, so that it never
// matches an id a task was enqueued with.
func putBackID(id string, attempt int) string {
	return ReservedMsgIDPrefix + "put-back:" + id + ":" + strconv.Itoa(attempt)
}

// publish sends m asynchronously and waits for the stream's answer, or
// until ctx ends (the outcome is then unknown).
func publish(ctx context.Context, js jetstream.JetStream, m *nats.Msg, opts ...jetstream.PublishOpt) (*jetstream.PubAck, error) {
	f, err := js.PublishMsgAsync(m, opts...)
	if err != nil {
		return nil, err
	}
	select {
	case ack := <-f.Ok():
		return ack, nil
	case err := <-f.Err():
		return nil, err
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}
