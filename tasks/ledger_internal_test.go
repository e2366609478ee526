package tasks

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/corral-go/corral/connection"
	"github.com/corral-go/corral/internal/natstest"
)

// newTestLedger declares queue "q" on a real server and returns its
// ledger, as a run would have it, and the queue's stream.
func newTestLedger(t testing.TB) (*ledger, jetstream.Stream) {
	t.Helper()
	srv := natstest.RunServer(t)
	nc, err := nats.Connect(srv.URL())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	w, err := New("q", fast, connection.NewFixed(nc), HandlerFunc(func(context.Context, *Task) error { return nil }))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := w.declare(ctx, nc); err != nil {
		t.Fatal(err)
	}
	js, _ := jetstream.New(nc)
	held, err := js.Stream(ctx, w.names.heldStream)
	if err != nil {
		t.Fatal(err)
	}
	queue, err := js.Stream(ctx, w.cfg.Stream)
	if err != nil {
		t.Fatal(err)
	}
	return &ledger{js: js, held: held, names: w.names, keep: w.cfg.KeepCompleted,
		dies: func(string) bool { return false }}, queue
}

// A put-back tried again after it went through (its answer lost), or
// made by the holder and the recoverer both, finds the record gone and
// leaves one copy in the queue, whose Msg-Id is in the reserved space.
func TestPutBackTwiceLeavesOneCopy(t *testing.T) {
	t.Parallel()
	l, queue := newTestLedger(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	tk := task{id: "job", header: nats.Header{}, data: []byte("x")}
	seq, err := l.claim(ctx, tk, holder{worker: "w1"}, 0)
	if err != nil {
		t.Fatal(err)
	}
	rec := record{task: tk, holder: holder{worker: "w1"}, state: stateHeld, seq: seq}
	next := tk
	next.attempt = 1
	if err := l.putBack(ctx, rec, next); err != nil {
		t.Fatalf("first put-back: %v", err)
	}
	if err := l.putBack(ctx, rec, next); !errors.Is(err, errRecordGone) {
		t.Fatalf("second put-back: %v, want errRecordGone", err)
	}
	info, err := queue.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if info.State.Msgs != 1 {
		t.Fatalf("the queue holds %d copies, want 1", info.State.Msgs)
	}
	m, err := queue.GetMsg(ctx, info.State.LastSeq)
	if err != nil {
		t.Fatal(err)
	}
	if id := m.Header.Get(jetstream.MsgIDHeader); !strings.HasPrefix(id, ReservedMsgIDPrefix) {
		t.Fatalf("put-back Msg-Id %q is outside the reserved space", id)
	}
}
