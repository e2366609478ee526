package tasks

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/corral-go/corral/internal/subject"
)

// FuzzTaskIDs checks the ids of tasks against a real server: two
// different ids never share a subject token, nor does an id with one
// made from a sequence; each token is one token of a subject that fits
// for the longest queue name; and an id CheckTask accepts is the id the
// worker reads from the task's first copy, from its claim's record and
// from a put-back copy, whose record no other id's claim finds.
func FuzzTaskIDs(f *testing.F) {
	for _, seed := range [][2]string{
		{"order:1", "yL1ph0KHvexxz8qfcCC9iB"},
		{"dead-1.retry-1", "360VR1SkASlfCSTPM3vif3"},
		{"a:1", "a%3A1"},
		{"é", "%C3%A9"},
		{"Corral-Task-seq-7", "seq-7"},
		{" x", "x"},
		{"x ", "x"},
		{"a.b", "a*b>"},
		{strings.Repeat("é", MaxIDLen/2), strings.Repeat("%", MaxIDLen)},
		{"same", "same"},
	} {
		f.Add(seed[0], seed[1], uint64(7))
	}
	l, queue := newTestLedger(f)
	f.Fuzz(func(t *testing.T, a, b string, seq uint64) {
		if a != b && token(a) == token(b) {
			t.Fatalf("ids %q and %q share the token %q", a, b, token(a))
		}
		made := taskID(nats.Header{}, seq)
		if checkID(made) == nil {
			t.Fatalf("the id %q made from sequence %d is one CheckTask accepts", made, seq)
		}
		for _, id := range []string{a, b} {
			checkToken(t, id)
			if checkID(id) == nil {
				roundTrip(t, l, queue, id)
			} else if got := parseTask(nats.Header{jetstream.MsgIDHeader: {id}}, nil, seq).id; got != made {
				t.Fatalf("a copy with Msg-Id %q, refused, is known as %q, want %q", id, got, made)
			}
		}
	})
}

// checkToken fails t unless id's token is one token of a subject, and its
// record's subject fits for the longest queue name.
func checkToken(t *testing.T, id string) {
	t.Helper()
	if len(id) > MaxIDLen {
		return
	}
	tok := token(id)
	if tok == "" && id != "" || strings.ContainsAny(tok, ". \t\r\n") || tok == "*" || tok == ">" {
		t.Fatalf("id %q has token %q, not one token of a subject", id, tok)
	}
	n := names{queue: strings.Repeat("q", subject.MaxBucketLen-len("corral_tasks_"))}
	if s := n.held(id, "0123456789012345678901"); id != "" && (len(s) > subject.MaxLen || subject.Validate(s, false) != nil) {
		t.Fatalf("id %q: record subject of %d bytes, invalid or over %d", id, len(s), subject.MaxLen)
	}
}

// roundTrip fails t unless id, enqueued as Enqueue would, is the id the
// worker reads from the copy as stored, from the record its claim finds
// or writes, and from a put-back copy.
func roundTrip(t *testing.T, l *ledger, queue jetstream.Stream, id string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	m := nats.NewMsg("corral.tasks." + l.names.queue) // the queue's default Subject
	m.Header.Set(jetstream.MsgIDHeader, id)
	ack, err := l.js.PublishMsg(ctx, m)
	if err != nil {
		t.Fatalf("enqueue %q: %v", id, err)
	}
	first := readCopy(ctx, t, queue, ack.Sequence)
	if first.id != id {
		t.Fatalf("enqueued as %q, read as %q", id, first.id)
	}
	seq, err := l.claim(ctx, first, holder{worker: "w"}, 0)
	var held *heldError
	if errors.As(err, &held) { // claimed by an earlier input: its record is this id's
		seq, err = held.seq, nil
	}
	if err != nil {
		t.Fatalf("claim %q: %v", id, err)
	}
	if rec, err := l.read(ctx, seq); err != nil || rec.id != id {
		t.Fatalf("the record of the claim of %q is %q (%v): another id's", id, rec.id, err)
	}
	next := first
	next.attempt++
	ack, err = l.js.PublishMsg(ctx, l.names.putBackMsg(next))
	if err != nil {
		t.Fatalf("put back %q: %v", id, err)
	}
	if back := readCopy(ctx, t, queue, ack.Sequence); back.id != id {
		t.Fatalf("put back as %q, read as %q", id, back.id)
	}
}

// readCopy reads the copy of a task stored at seq.
func readCopy(ctx context.Context, t *testing.T, queue jetstream.Stream, seq uint64) task {
	t.Helper()
	m, err := queue.GetMsg(ctx, seq)
	if err != nil {
		t.Fatalf("read %d: %v", seq, err)
	}
	return parseTask(m.Header, m.Data, m.Sequence)
}
