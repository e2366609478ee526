package inspector_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/corral-go/corral"
	"github.com/corral-go/corral/consumer"
	"github.com/corral-go/corral/fleet"
	"github.com/corral-go/corral/inspector"
	"github.com/corral-go/corral/internal/natstest"
	"github.com/corral-go/corral/stream"
	"github.com/corral-go/corral/tasks"
)

// run runs c until the test ends, and waits until it is ready.
func run(t *testing.T, c *corral.Client) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = c.Run(ctx)
	}()
	t.Cleanup(func() { cancel(); <-done })
	rctx, rcancel := context.WithTimeout(ctx, 30*time.Second)
	defer rcancel()
	if err := c.Ready(rctx); err != nil {
		t.Fatal(err)
	}
}

// A JetStream handler paused by name delivers nothing to any instance,
// even one that restarts; resumed, it gets all that waited. The queues
// a Client declares are known with their configuration, others found.
func TestInspectorPausesAHandler(t *testing.T) {
	srv := natstest.RunServer(t)
	cfg := corral.Config{Name: "orders"}
	cfg.Connection.Servers = []string{srv.URL()}
	cfg.Streams = map[string]stream.Config{"ORDERS": {Subjects: []string{"orders.>"}}}
	cfg.Tasks = map[string]tasks.Config{"render": {DeadLetter: "orders.render.failed"}}
	c, err := corral.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	var got atomic.Int32
	hc := consumer.Config{Subject: "orders.new", JetStream: consumer.JetStream{Stream: "ORDERS", Consumer: "fulfil"}}
	if err := c.Handle("fulfil", hc, consumer.HandlerFunc(func(context.Context, *consumer.Msg) error {
		got.Add(1)
		return nil
	})); err != nil {
		t.Fatal(err)
	}
	run(t, c)
	in := c.Inspector()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if err := in.PauseHandler(ctx, "orders", "fulfil", time.Now().Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	if err := in.PauseHandler(ctx, "orders", "nope", time.Now().Add(time.Hour)); err == nil {
		t.Fatal("pause of a handler no instance has: nil error")
	}
	// A restart of the handler declares its consumer again: the pause
	// stays.
	if err := c.RemoveHandler(ctx, "fulfil"); err != nil {
		t.Fatal(err)
	}
	nc, err := c.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	js, _ := jetstream.New(nc)
	for i := range 5 {
		if _, err := js.Publish(ctx, "orders.new", []byte(fmt.Sprint(i))); err != nil {
			t.Fatal(err)
		}
	}
	if err := c.Handle("fulfil", hc, consumer.HandlerFunc(func(context.Context, *consumer.Msg) error {
		got.Add(1)
		return nil
	})); err != nil {
		t.Fatal(err)
	}
	natstest.Eventually(t, 30*time.Second, func() bool { return c.Ready(ctx) == nil }, func() string { return "fulfil not ready again" })
	// The handler asks, and the server holds its request and delivers
	// nothing.
	var info *jetstream.ConsumerInfo
	natstest.Eventually(t, 30*time.Second, func() bool {
		cons, err := js.Consumer(ctx, "ORDERS", "fulfil")
		if err != nil {
			return false
		}
		info = cons.CachedInfo()
		return info.NumWaiting >= 1 && info.NumPending == 5 && info.NumAckPending == 0
	}, func() string { return fmt.Sprintf("fulfil: %+v, want a request held and 5 pending", info) })
	if n := got.Load(); n != 0 {
		t.Fatalf("%d messages handled while paused", n)
	}
	if err := in.ResumeHandler(ctx, "orders", "fulfil"); err != nil {
		t.Fatal(err)
	}
	natstest.Eventually(t, 30*time.Second, func() bool { return got.Load() == 5 }, func() string {
		return fmt.Sprintf("%d of 5 handled after the resume", got.Load())
	})

	// Queues: the configured one and one found on the server.
	if _, err := in.Queue(ctx, "render"); err != nil {
		t.Fatal(err)
	}
	if _, err := in.Queue(ctx, "absent"); err == nil {
		t.Fatal("an absent queue: nil error")
	}
	found, err := in.Ping(ctx, fleet.Query{Name: "orders", Wait: 300 * time.Millisecond})
	if err != nil || len(found) != 1 || found[0].ID != c.Identity().ID {
		t.Fatalf("ping: %+v, %v", found, err)
	}
}

// A queue's workers show with what their leases say and what their
// processes answer: capacity, lease state, the tasks held.
func TestInspectorWorkers(t *testing.T) {
	srv := natstest.RunServer(t)
	cfg := corral.Config{Name: "render-farm"}
	cfg.Connection.Servers = []string{srv.URL()}
	cfg.Tasks = map[string]tasks.Config{"render": {}}
	c, err := corral.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.HandleTasks("render", tasks.Config{MaxConcurrency: 3}, tasks.HandlerFunc(func(context.Context, *tasks.Task) error {
		return nil
	})); err != nil {
		t.Fatal(err)
	}
	run(t, c)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var workers []inspector.Worker
	natstest.Eventually(t, 30*time.Second, func() bool {
		workers, err = c.Inspector().Workers(ctx, "render")
		return err == nil && len(workers) == 1 && workers[0].Answered
	}, func() string { return fmt.Sprintf("workers: %+v, %v", workers, err) })
	w, st := workers[0], c.Status().Tasks[0]
	if w.Worker != st.Worker || w.Process != st.Process || w.Capacity != 3 || w.Lease != tasks.LeaseStateHeld || w.Renewed.IsZero() {
		t.Fatalf("worker %+v, want the Client's (%s of %s), capacity 3, lease held", w, st.Worker, st.Process)
	}
}
