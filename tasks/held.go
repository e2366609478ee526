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

// ledger is the queue's held stream and its waiting copies: every write
// of the protocol goes through it.
type ledger struct {
	js    jetstream.JetStream
	held  jetstream.Stream
	names names
	keep  time.Duration // how long a tombstone is kept
	// keepResults is how long a tombstone with a result is kept.
	keepResults time.Duration
	dies        func(step string) bool
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

// claim writes t's held record for h, on the condition that the task's
// last record is at sequence after: 0 for none at all (held by anyone, or
// recently finished), a failed run's tombstone for a retry (see decide). It
// returns the record's sequence, a *heldError naming the record that
// exists, an error wrapping errUnsure when the claim may have been stored,
// or another error when it was refused (one jsapi.TooLarge matches when
// the record was too large to send or store).
func (l *ledger) claim(ctx context.Context, t task, h holder, after uint64) (uint64, error) {
	ack, err := publish(ctx, l.js, l.names.claimMsg(t, h, after))
	if err == nil {
		return ack.Sequence, nil
	}
	if seq, ok := lastSequence(err); ok && seq > 0 {
		return 0, &heldError{seq: seq}
	}
	code, ok := jsapi.Code(err)
	if ok && code != jetstream.JSErrCodeStreamWrongLastSequenceConstant || jsapi.TooLarge(err) {
		// Not stored; too large, it was not even sent.
		return 0, fmt.Errorf("claim task %s: refused: %w", t.id, err)
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

// running reports whether a run still holds task id (or whether that
// could not be told): its cancel marker does not end it.
func (l *ledger) running(ctx context.Context, id string) bool {
	_, ok, err := liveRecord(ctx, l.held, l.names, id)
	return ok || err != nil
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
func (l *ledger) finish(ctx context.Context, rec record, state string, cause error, result []byte) error {
	keep := l.keep
	if result != nil {
		keep = l.keepResults
	}
	m := l.names.tombstoneMsg(rec, state, cause, keep, result)
	_, err := publish(ctx, l.js, m)
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
	if _, err := publish(ctx, l.js, l.names.putBackMsg(next)); err != nil {
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

// publish sends m asynchronously and waits for the stream's answer, or
// until ctx ends (the outcome is then unknown).
func publish(ctx context.Context, js jetstream.JetStream, m *nats.Msg) (*jetstream.PubAck, error) {
	f, err := js.PublishMsgAsync(m)
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
