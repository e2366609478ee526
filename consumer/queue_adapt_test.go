package consumer_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/corral-go/corral/consumer"
	"github.com/corral-go/corral/internal/natstest"
)

// With the default queue_size a JetStream handler holds what its pace
// needs: a no-op handler on a backlog grows past the starting
// Workers + 64 (it ran out between pulls), a slow one never holds more
// than that, leaving the rest of the stream to other instances.
func TestDefaultQueueAdaptsToTheHandlersPace(t *testing.T) {
	t.Parallel()
	e := newJSEnv(t, jetstream.StreamConfig{Name: "PACE", Subjects: []string{"pace.>"}})
	const backlog = 5000
	e.publishSeq("pace.fast", backlog)
	e.publishSeq("pace.slow", 500)
	var fast atomic.Int64
	if err := e.sup.Handle("fast", consumer.Config{Workers: 4, JetStream: consumer.JetStream{Stream: "PACE", FilterSubjects: []string{"pace.fast"}}},
		consumer.HandlerFunc(func(context.Context, *consumer.Msg) error { fast.Add(1); return nil })); err != nil {
		t.Fatal(err)
	}
	var slow atomic.Int64
	if err := e.sup.Handle("slow", consumer.Config{Workers: 1, JetStream: consumer.JetStream{Stream: "PACE", FilterSubjects: []string{"pace.slow"}}},
		consumer.HandlerFunc(func(ctx context.Context, _ *consumer.Msg) error {
			slow.Add(1)
			select {
			case <-time.After(10 * time.Millisecond):
			case <-ctx.Done():
			}
			return nil
		})); err != nil {
		t.Fatal(err)
	}
	stop := e.serve()
	e.subscribed(2)
	natstest.Eventually(t, 30*time.Second, func() bool { return fast.Load() >= backlog },
		func() string { return fmt.Sprintf("fast handled %d of %d", fast.Load(), backlog) })
	// The slow handler has had more than a second, long enough to shrink
	// had it ever grown.
	natstest.Eventually(t, 30*time.Second, func() bool { return slow.Load() >= 100 },
		func() string { return fmt.Sprintf("slow handled %d", slow.Load()) })
	const start = 4 + 64
	t.Logf("peak held: fast %d, slow %d", e.status("fast").Counters.PeakHeld, e.status("slow").Counters.PeakHeld)
	if peak := e.status("fast").Counters.PeakHeld; peak <= 2*start {
		t.Errorf("fast: peak held %d, want more than twice the starting %d", peak, start)
	}
	if peak := e.status("slow").Counters.PeakHeld; peak > 1+64 {
		t.Errorf("slow: peak held %d, want at most the starting %d", peak, 1+64)
	}
	cleanStop(t, stop)
}

// With the default queue_size a JetStream handler of large messages never
// has so much on its way that the server closes its connection as a slow
// consumer (past max_pending): four nats.go Consume calls of 500 64KiB
// messages each did, and then waited out the ack wait for every message
// lost with the connection.
func TestDefaultQueueKeepsPullsWithinTheServersBuffer(t *testing.T) {
	t.Parallel()
	srv := natstest.RunServer(t, func(o *server.Options) { o.MaxPending = 16 << 20 })
	e := newJSEnvOn(t, srv, jetstream.StreamConfig{Name: "BIG", Subjects: []string{"big"}})
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	// 512KiB messages: the first pull of Workers + 64 would be 34MiB.
	const n = 100
	payload := make([]byte, 512<<10)
	for range n {
		if _, err := e.js.Publish(ctx, "big", payload); err != nil {
			t.Fatal(err)
		}
	}
	var handled atomic.Int64
	if err := e.sup.Handle("big", consumer.Config{Workers: 4, JetStream: consumer.JetStream{Stream: "BIG"}},
		consumer.HandlerFunc(func(context.Context, *consumer.Msg) error { handled.Add(1); return nil })); err != nil {
		t.Fatal(err)
	}
	stop := e.serve()
	natstest.Eventually(t, 45*time.Second, func() bool { return handled.Load() >= n },
		func() string { return fmt.Sprintf("handled %d of %d", handled.Load(), n) })
	v, err := srv.Raw().Varz(nil)
	if err != nil {
		t.Fatal(err)
	}
	if v.SlowConsumers != 0 || e.sub.Stats().Reconnects != 0 {
		t.Fatalf("slow consumers %d, reconnects %d: a pull overran the server's buffer", v.SlowConsumers, e.sub.Stats().Reconnects)
	}
	cleanStop(t, stop)
}

// A bound consumer with a max_request_max_bytes, even one below a
// message's size, is pulled like any other: pulls carry no byte budget,
// which the server would refuse above that limit, and which would end
// every pull undelivered below a message's size.
func TestBoundConsumerWithMaxRequestBytesIsPulled(t *testing.T) {
	t.Parallel()
	e := newJSEnv(t, jetstream.StreamConfig{Name: "RMB", Subjects: []string{"rmb"}})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := e.js.CreateConsumer(ctx, "RMB", jetstream.ConsumerConfig{Durable: "b",
		AckPolicy: jetstream.AckExplicitPolicy, MaxRequestMaxBytes: 64 << 10}); err != nil {
		t.Fatal(err)
	}
	const n = 200
	e.publishSeq("rmb", n-1)
	if _, err := e.js.Publish(ctx, "rmb", make([]byte, 100<<10)); err != nil {
		t.Fatal(err)
	}
	var handled atomic.Int64
	if err := e.sup.Handle("b", consumer.Config{Workers: 4, JetStream: consumer.JetStream{Stream: "RMB", Consumer: "b", Bind: true}},
		consumer.HandlerFunc(func(context.Context, *consumer.Msg) error { handled.Add(1); return nil })); err != nil {
		t.Fatal(err)
	}
	stop := e.serve()
	natstest.Eventually(t, 20*time.Second, func() bool { return handled.Load() >= n },
		func() string { return fmt.Sprintf("handled %d of %d", handled.Load(), n) })
	cleanStop(t, stop)
}
