package consumer

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/corral-go/corral/internal/natstest"
)

// heldMsg is a JetStream message held by r, acked on reply, that the
// server last heard of long ago.
func heldMsg(r *jsRun, nc *nats.Conn, reply string) *Msg {
	m := &Msg{raw: &nats.Msg{Reply: reply}, js: &jsState{nc: nc}}
	m.js.alive.Store(time.Now().Add(-time.Hour).UnixNano())
	r.held.add(m)
	return m
}

func TestKeeperIsNotHeldUpByADoubleAck(t *testing.T) {
	t.Parallel()
	srv := natstest.RunServer(t)
	nc := connectInternal(t, srv.URL())
	// The server side of the acks: the confirmation of slow's ack waits
	// for the test.
	server := connectInternal(t, srv.URL())
	var toFast atomic.Int32
	asked := make(chan *nats.Msg, 1)
	if _, err := server.Subscribe("ack.slow", func(m *nats.Msg) { asked <- m }); err != nil {
		t.Fatal(err)
	}
	if _, err := server.Subscribe("ack.fast", func(*nats.Msg) { toFast.Add(1) }); err != nil {
		t.Fatal(err)
	}
	if err := server.Flush(); err != nil {
		t.Fatal(err)
	}

	r := &jsRun{j: &jsHandler{handlerBase: handlerBase{stats: &counters{}}}, held: newHeldMsgs()}
	r.setLimits(300*time.Millisecond, 1)
	slow := heldMsg(r, nc, "ack.slow")
	heldMsg(r, nc, "ack.fast")

	ackErr := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		ackErr <- slow.DoubleAck(ctx)
	}()
	var req *nats.Msg
	select {
	case req = <-asked:
	case <-time.After(20 * time.Second):
		t.Fatal("the ack never reached the server")
	}
	defer r.startKeepalive(context.Background())()
	confirmed := false
	defer func() {
		if !confirmed {
			_ = req.Respond(nil)
			<-ackErr
		}
	}()

	// While slow's confirmation is outstanding, fast is kept alive again
	// and again.
	natstest.Eventually(t, 20*time.Second, func() bool { return toFast.Load() >= 3 }, func() string {
		return "the keepalive was stuck behind a DoubleAck waiting for its confirmation"
	})
	if err := slow.InProgress(); !errors.Is(err, ErrSettled) {
		t.Fatalf("in-progress ack after a DoubleAck: got %v, want ErrSettled", err)
	}
	if err := req.Respond(nil); err != nil {
		t.Fatal(err)
	}
	confirmed = true
	if err := <-ackErr; err != nil {
		t.Fatalf("DoubleAck: %v", err)
	}
}
