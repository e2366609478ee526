package consumer_test

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/corral-go/corral/connection"
	"github.com/corral-go/corral/consumer"
	"github.com/corral-go/corral/internal/natstest"
	"github.com/corral-go/corral/stream"
	"github.com/corral-go/corral/supervisor"
)

// jsEnv is a stream on a server, a publisher, and a consumer supervisor.
type jsEnv struct {
	*env
	js jetstream.JetStream
}

func newJSEnv(t *testing.T, stream jetstream.StreamConfig) *jsEnv {
	t.Helper()
	return newJSEnvOn(t, natstest.RunServer(t), stream)
}

// newJSEnvOn is newJSEnv on a server of the test's own.
func newJSEnvOn(t *testing.T, srv *natstest.Server, stream jetstream.StreamConfig) *jsEnv {
	t.Helper()
	e := &jsEnv{env: newEnvOn(t, srv)}
	var err error
	if e.js, err = jetstream.New(e.pub); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := e.js.CreateStream(ctx, stream); err != nil {
		t.Fatal(err)
	}
	return e
}

// publishSeq publishes n messages whose payload is their index.
func (e *jsEnv) publishSeq(subject string, n int) {
	e.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for i := range n {
		if _, err := e.js.Publish(ctx, subject, []byte(strconv.Itoa(i))); err != nil {
			e.t.Fatal(err)
		}
	}
}

// seen records which payloads a handler processed and how often.
type seen struct {
	mu    sync.Mutex
	count map[string]int
}

func newSeen() *seen { return &seen{count: map[string]int{}} }

func (s *seen) add(m *consumer.Msg) {
	s.mu.Lock()
	s.count[string(m.Data())]++
	s.mu.Unlock()
}

func (s *seen) unique() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.count)
}

func (s *seen) total() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, c := range s.count {
		n += c
	}
	return n
}

// missing lists payloads 0..n-1 never processed.
func (s *seen) missing(n int) []int {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []int
	for i := range n {
		if s.count[strconv.Itoa(i)] == 0 {
			out = append(out, i)
		}
	}
	return out
}

func TestJetStreamProcessesEveryMessage(t *testing.T) {
	t.Parallel()
	e := newJSEnv(t, jetstream.StreamConfig{Name: "ORDERS", Subjects: []string{"orders.>"}})
	got := newSeen()
	h := consumer.HandlerFunc(func(ctx context.Context, m *consumer.Msg) error {
		got.add(m)
		return nil
	})
	cfg := consumer.Config{Subject: "orders.created", Workers: 4, QueueSize: 16,
		JetStream: consumer.JetStream{Stream: "ORDERS", Consumer: "billing"}}
	if err := e.sup.Handle("billing", cfg, h); err != nil {
		t.Fatal(err)
	}
	const n = 500
	e.publishSeq("orders.created", n)
	stop := e.serve()
	eventually(t, "all processed", func() bool { return got.unique() == n })
	eventually(t, "all acked", func() bool { return e.status("billing").Counters.Acked == n })
	cleanStop(t, stop)
	c := e.status("billing").Counters
	if c.Naked != 0 || c.Redelivered != 0 || c.Dropped != 0 || got.total() != n {
		t.Fatalf("counters %+v, handled %d times: want each once", c, got.total())
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	cons, err := e.js.Consumer(ctx, "ORDERS", "billing")
	if err != nil {
		t.Fatal(err)
	}
	// Plain acks are not confirmed: the server settles them after Acked
	// counted them sent.
	var info *jetstream.ConsumerInfo
	eventually(t, "server settled every ack", func() bool {
		info, err = cons.Info(ctx)
		return err == nil && info.NumAckPending == 0 && info.NumPending == 0
	})
	if info.NumRedelivered != 0 || info.Config.AckWait != 30*time.Second || info.Config.MaxDeliver != 5 {
		t.Fatalf("consumer: got %+v", info)
	}
}

func TestJetStreamHoldsNoMoreThanItsPool(t *testing.T) {
	t.Parallel()
	e := newJSEnv(t, jetstream.StreamConfig{Name: "FLOW", Subjects: []string{"flow"}})
	gate := make(chan struct{})
	h := consumer.HandlerFunc(func(ctx context.Context, m *consumer.Msg) error {
		<-gate
		return nil
	})
	const workers, queue, n = 3, 5, 100
	cfg := consumer.Config{Workers: workers, QueueSize: queue, JetStream: consumer.JetStream{Stream: "FLOW"}}
	if err := e.sup.Handle("flow", cfg, h); err != nil {
		t.Fatal(err)
	}
	e.publishSeq("flow", n)
	stop := e.serve()
	eventually(t, "pool full", func() bool {
		c := e.status("flow").Counters
		return c.InFlight == workers && c.QueueDepth == queue
	})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	cons, err := e.js.Consumer(ctx, "FLOW", "flow")
	if err != nil {
		t.Fatal(err)
	}
	// Pull requests follow free room: with the pool full, none is out, so
	// the server has delivered exactly what the pool holds.
	for range 20 {
		info, err := cons.Info(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if info.NumAckPending != workers+queue || info.NumWaiting != 0 {
			t.Fatalf("server has %d delivered unacked and %d pull requests waiting; want %d and 0",
				info.NumAckPending, info.NumWaiting, workers+queue)
		}
		if c := e.status("flow").Counters; c.Received != workers+queue {
			t.Fatalf("received %d, want %d", c.Received, workers+queue)
		}
	}
	close(gate)
	eventually(t, "all acked", func() bool { return e.status("flow").Counters.Acked == n })
	cleanStop(t, stop)
	if c := e.status("flow").Counters; c.Dropped != 0 || c.Redelivered != 0 {
		t.Fatalf("counters: %+v", c)
	}
}

func TestJetStreamKeepsLongHandlersAlive(t *testing.T) {
	t.Parallel()
	e := newJSEnv(t, jetstream.StreamConfig{Name: "LONG", Subjects: []string{"long"}})
	// Long enough that an in-progress ack sent late on a loaded machine
	// still beats it.
	const ackWait = 2 * time.Second
	got := newSeen()
	h := consumer.HandlerFunc(func(ctx context.Context, m *consumer.Msg) error {
		got.add(m)
		if string(m.Data()) != "0" {
			return nil
		}
		select {
		case <-time.After(3 * ackWait):
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	})
	// One worker, one queued: the second message waits 3 ack waits in the
	// queue while the first runs them.
	cfg := consumer.Config{Workers: 1, QueueSize: 1, JetStream: consumer.JetStream{Stream: "LONG", AckWait: ackWait}}
	if err := e.sup.Handle("long", cfg, h); err != nil {
		t.Fatal(err)
	}
	e.publishSeq("long", 2)
	stop := e.serve()
	eventually(t, "acked", func() bool { return e.status("long").Counters.Acked == 2 })
	cleanStop(t, stop)
	c := e.status("long").Counters
	if got.total() != 2 || c.Redelivered != 0 || c.InProgress < 4 {
		t.Fatalf("handled %d times, counters %+v: want each once, kept alive by in-progress acks", got.total(), c)
	}
}

// bindTo creates a durable pull consumer on stream with ackWait, for a
// handler to bind to.
func (e *jsEnv) bindTo(stream, name string, ackWait time.Duration) {
	e.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := e.js.CreateConsumer(ctx, stream, jetstream.ConsumerConfig{Durable: name,
		AckPolicy: jetstream.AckExplicitPolicy, AckWait: ackWait}); err != nil {
		e.t.Fatal(err)
	}
}

func TestJetStreamBoundConsumerKeepsLongHandlersAlive(t *testing.T) {
	t.Parallel()
	e := newJSEnv(t, jetstream.StreamConfig{Name: "BLONG", Subjects: []string{"blong"}})
	// Far shorter than the default a handler declared without AckWait has.
	const ackWait = 2 * time.Second
	e.bindTo("BLONG", "b", ackWait)
	got := newSeen()
	gate := make(chan struct{})
	var gateOnce sync.Once
	release := func() { gateOnce.Do(func() { close(gate) }) }
	t.Cleanup(release)
	h := consumer.HandlerFunc(func(ctx context.Context, m *consumer.Msg) error {
		got.add(m)
		select {
		case <-gate:
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	})
	// Room beyond the one message: a redelivery would be pulled and seen.
	cfg := consumer.Config{Workers: 2, QueueSize: 2, JetStream: consumer.JetStream{Stream: "BLONG", Consumer: "b", Bind: true}}
	if err := e.sup.Handle("b", cfg, h); err != nil {
		t.Fatal(err)
	}
	e.publishSeq("blong", 1)
	stop := e.serve()
	// Four in-progress acks, each sent a third of the ack wait or more
	// after the last: the handler has outlived its ack wait.
	eventually(t, "kept alive four times", func() bool { return e.status("b").Counters.InProgress >= 4 })
	release()
	eventually(t, "acked", func() bool { return e.status("b").Counters.Acked >= 1 })
	cleanStop(t, stop)
	if c := e.status("b").Counters; got.total() != 1 || c.Redelivered != 0 {
		t.Fatalf("handled %d times, counters %+v: want once, kept alive by in-progress acks", got.total(), c)
	}
}

func TestJetStreamBoundConsumerIsSlowAfterHalfItsAckWait(t *testing.T) {
	t.Parallel()
	e := newJSEnv(t, jetstream.StreamConfig{Name: "BSLOW", Subjects: []string{"bslow"}})
	// A second before the pool counts as slow, against 15 s for the
	// default ack wait.
	e.bindTo("BSLOW", "b", 2*time.Second)
	gate := make(chan struct{})
	var gateOnce sync.Once
	release := func() { gateOnce.Do(func() { close(gate) }) }
	t.Cleanup(release)
	h := consumer.HandlerFunc(func(ctx context.Context, m *consumer.Msg) error {
		select {
		case <-gate:
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	})
	cfg := consumer.Config{Workers: 1, QueueSize: 1, JetStream: consumer.JetStream{Stream: "BSLOW", Consumer: "b", Bind: true}}
	if err := e.sup.Handle("b", cfg, h); err != nil {
		t.Fatal(err)
	}
	e.publishSeq("bslow", 2)
	stop := e.serve()
	natstest.WaitFor[consumer.SlowConsumerStarted](t, e.rec, 0, 10*time.Second, nil)
	release()
	eventually(t, "acked", func() bool { return e.status("b").Counters.Acked == 2 })
	cleanStop(t, stop)
}

func (e *reasonless) Error() string { return e.reason }

// unmatchable is an error type whose Is, which errors.Is calls, needs a
// non-nil receiver too.
type unmatchable struct{ reason string }

func (e *unmatchable) Error() string        { return e.reason }
func (e *unmatchable) Is(target error) bool { return e.reason == target.Error() }

func TestJetStreamStopReturnsUnstartedMessages(t *testing.T) {
	t.Parallel()
	e := newJSEnv(t, jetstream.StreamConfig{Name: "HANDOFF", Subjects: []string{"handoff"}})
	gate := make(chan struct{})
	var gateOnce sync.Once
	t.Cleanup(func() { gateOnce.Do(func() { close(gate) }) })
	first := consumer.HandlerFunc(func(ctx context.Context, m *consumer.Msg) error {
		<-gate
		return nil
	})
	// A long ack wait: a message that was not handed back would come back
	// only after it.
	cfg := consumer.Config{Workers: 1, QueueSize: 4, JetStream: consumer.JetStream{Stream: "HANDOFF", Consumer: "shared", AckWait: time.Minute}}
	if err := e.sup.Handle("a", cfg, first); err != nil {
		t.Fatal(err)
	}
	const n = 10
	e.publishSeq("handoff", n)
	stopA := e.serve()
	eventually(t, "instance a holds five", func() bool {
		c := e.status("a").Counters
		return c.InFlight == 1 && c.QueueDepth == 4
	})
	stopped := make(chan error, 1)
	go func() { stopped <- stopA() }()
	// Once it no longer pulls, it starts nothing new either; then the
	// message in flight may finish.
	eventually(t, "instance a stopping", func() bool { return !e.status("a").Ready })
	gateOnce.Do(func() { close(gate) })
	if err := <-stopped; !errors.Is(err, context.Canceled) {
		t.Fatal(err)
	}
	a := e.status("a").Counters
	drained, _ := natstest.WaitFor[consumer.Drained](t, e.rec, 0, time.Second, nil)
	if a.Acked+a.Naked != 5 || drained.Returned != a.Naked || drained.Abandoned != 0 {
		t.Fatalf("instance a: counters %+v, drained %+v: want every held message acked or handed back", a, drained)
	}

	// Instance b, on the same durable consumer, gets the rest at once.
	got := newSeen()
	other := connect(t, e.srv.URL())
	b := consumer.NewGroup(connection.NewFixed(other), supervisor.Events{})
	if err := b.Handle("b", cfg, consumer.HandlerFunc(func(ctx context.Context, m *consumer.Msg) error {
		got.add(m)
		return nil
	})); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- b.Serve(ctx) }()
	// Within a third of the ack wait.
	natstest.Eventually(t, 20*time.Second, func() bool { return got.unique() == n-int(a.Acked) }, func() string {
		return fmt.Sprintf("instance b got %d of %d; the handed-back messages did not come back before their ack wait", got.unique(), n-int(a.Acked))
	})
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatal(err)
	}
}

func TestJetStreamStopHandsBackWhatItCutsOff(t *testing.T) {
	t.Parallel()
	e := newJSEnv(t, jetstream.StreamConfig{Name: "CUT", Subjects: []string{"cut"}})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	dlq, err := e.js.CreateStream(ctx, jetstream.StreamConfig{Name: "CUTDLQ", Subjects: []string{"dlq.cut"}})
	if err != nil {
		t.Fatal(err)
	}
	started := make(chan struct{}, 1)
	h := consumer.HandlerFunc(func(ctx context.Context, m *consumer.Msg) error {
		started <- struct{}{}
		<-ctx.Done() // runs past the stop's grace period
		return ctx.Err()
	})
	// Its first delivery is its last: a failure would be dead-lettered.
	cfg := consumer.Config{JetStream: consumer.JetStream{Stream: "CUT", MaxDeliver: 1, DeadLetter: "dlq.cut"},
		Restart: supervisor.Policy{ShutdownTimeout: 2 * time.Second}}
	if err := e.sup.Handle("cut", cfg, h); err != nil {
		t.Fatal(err)
	}
	e.publishSeq("cut", 1)
	stop := e.serve()
	<-started
	// The claim is what the stop hands back, not how fast: see
	// stopPastGrace.
	stopPastGrace(t, e.env, stop, "handler/cut")
	drained, _ := natstest.WaitFor[consumer.Drained](t, e.rec, 0, time.Second, nil)
	c := e.status("cut").Counters
	if drained.Returned != 1 || c.Naked != 1 || c.DeadLettered != 0 || c.DeadLetterFailed != 0 {
		t.Fatalf("drained %+v, counters %+v: want the message cut off handed back", drained, c)
	}
	info, err := dlq.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if info.State.Msgs != 0 {
		t.Fatalf("dead-letter stream holds %d messages, want none", info.State.Msgs)
	}
}

func TestJetStreamHandlersFollowAReplacedConnection(t *testing.T) {
	t.Parallel()
	cfg := consumer.Config{JetStream: consumer.JetStream{Stream: "REPLACED",
		CreateStream: &stream.Config{Subjects: []string{"replaced.js"}}}}
	followReplacedConnection(t, cfg, func(t *testing.T, nc *nats.Conn, data string) {
		js, err := jetstream.New(nc)
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if _, err := js.Publish(ctx, "replaced.js", []byte(data)); err != nil {
			t.Fatal(err)
		}
	})
}
