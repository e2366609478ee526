package corral_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/corral-go/corral"
	"github.com/corral-go/corral/consumer"
	"github.com/corral-go/corral/internal/natstest"
	"github.com/corral-go/corral/publisher"
	"github.com/corral-go/corral/stream"
	"github.com/corral-go/corral/tasks"
)

// superTasks is the task queue of the supercluster test, placed in
// cluster A: short leases, so that a worker cut off is found dead
// quickly.
var superTasks = tasks.Config{MaxConcurrency: 8, Heartbeat: 300 * time.Millisecond, LeaseTTL: 2 * time.Second,
	ClaimWait: 2 * time.Second, KeepCompleted: time.Minute, Placement: &stream.Placement{Cluster: "A"}}

// superApp is an instance of the supercluster test's application on
// servers: a handler of ORDERS, placed in cluster B, and a worker of the
// task queue render. It notes each order handled under "orders", and
// each task started under "started" as "<name> <id>"; a task run by
// instance "b" holds until its ctx ends, one run by any other completes
// at once.
func superApp(t *testing.T, name string, servers []string, saw *seen) *corral.Client {
	t.Helper()
	cfg := corral.Config{Name: name}
	cfg.Connection.Servers = servers
	cfg.Streams = map[string]stream.Config{"ORDERS": {Subjects: []string{"orders.>"}, Placement: &stream.Placement{Cluster: "B"}}}
	cfg.Tasks = map[string]tasks.Config{"render": superTasks}
	rec := natstest.NewRecorder()
	c, err := corral.New(cfg, corral.WithEventHook(rec.Hook))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { // what a failure needs explained
		if t.Failed() {
			for _, e := range rec.Events() {
				t.Logf("%s: %T %+v", name, e, e)
			}
		}
	})
	hc := consumer.Config{Subject: "orders.>", JetStream: consumer.JetStream{Stream: "ORDERS", AckWait: time.Second}}
	if err := c.Handle("fulfil", hc, consumer.HandlerFunc(func(_ context.Context, m *consumer.Msg) error {
		saw.note("orders", string(m.Data()))
		return nil
	})); err != nil {
		t.Fatal(err)
	}
	if err := c.HandleTasks("render", tasks.Config{}, tasks.HandlerFunc(func(ctx context.Context, task *tasks.Task) error {
		saw.note("started", name+" "+task.ID())
		if name == "b" {
			<-ctx.Done()
			return ctx.Err()
		}
		return nil
	})); err != nil {
		t.Fatal(err)
	}
	return c
}

// A task queue placed in cluster A has workers in both clusters of a
// supercluster; cluster B's worker is cut off, and its tasks move to cluster A's worker within
// the lease TTL and a margin, each recorded completed once. A Client in
// cluster A uses a stream placed in cluster B through a gateway outage:
// what its publisher acknowledged and what it held during the outage are
// all handled.
func TestSuperClusterStreamsAndTasksAcrossGateways(t *testing.T) {
	t.Parallel()
	sc := natstest.RunSuperCluster(t, 2, 1)
	urlsA := strings.Split(sc.Cluster("A").URLs(), ",")
	// B's worker reaches its server through a proxy that the test pauses,
	// as a network partition or a frozen host would.
	bLink := natstest.NewProxy(t, sc.Cluster("B").Nodes[0].URL())
	saw := newSeen()
	b := superApp(t, "b", []string{bLink.URL()}, saw)
	bctx := runReady(t, b)

	// B's worker runs tasks until it is cut off.
	const n = 6
	var ids, onB, onA []string
	for i := range n {
		id := fmt.Sprintf("task-%d", i)
		ids, onB, onA = append(ids, id), append(onB, "b "+id), append(onA, "a "+id)
		e, err := b.EnqueueTask(bctx, "render", nil, tasks.WithID(id))
		if err != nil {
			t.Fatal(err)
		}
		if err := e.Wait(bctx); err != nil {
			t.Fatal(err)
		}
	}
	saw.waitFor(t, bctx, "tasks started on B", "started", onB)

	a := superApp(t, "a", urlsA, saw)
	ctx := runReady(t, a)
	// Declared from cluster B, the queue is where its placement says.
	js := natstest.JetStream(t, sc.Cluster("A").URLs())
	for name, want := range map[string]string{"TASKS_render": "A", "TASKS_render_HELD": "A", "KV_corral_tasks_render": "A", "ORDERS": "B"} {
		s, err := js.Stream(ctx, name)
		if err != nil || s.CachedInfo().Cluster == nil || s.CachedInfo().Cluster.Name != want {
			t.Errorf("stream %s: %v; want it in cluster %s", name, err, want)
		}
	}
	if early := saw.withPrefix("started", "a "); len(early) > 0 {
		t.Fatalf("%v started on A while B's worker held every task", early)
	}
	bLink.Pause()
	cut := time.Now()
	saw.waitFor(t, ctx, "of B's tasks started on A", "started", onA)
	last := time.Since(cut) // at most a wake-up late
	t.Logf("B's tasks all started in cluster A %v after B's worker was cut off (lease TTL %v)", last, superTasks.LeaseTTL)
	if bound := superTasks.LeaseTTL + 3*time.Second; last > bound {
		t.Errorf("B's tasks moved to cluster A %v after the cut, want within %v (lease TTL + margin)", last, bound)
	}
	for _, k := range onA {
		if times := saw.count("started", k); times != 1 {
			t.Errorf("%q started %d times, want once", k, times)
		}
	}
	q, err := a.Tasks("render")
	if err != nil {
		t.Fatal(err)
	}
	assertCompletedOnce(t, ctx, q, ids)
	bLink.Restore()

	var sent []string
	publish := func(k int) []*publisher.Future {
		var fs []*publisher.Future
		for range k {
			id := fmt.Sprintf("order-%d", len(sent))
			sent = append(sent, id)
			f, err := a.Publish(ctx, "orders.new", []byte(id))
			if err != nil {
				t.Fatal(err)
			}
			fs = append(fs, f)
		}
		return fs
	}
	for _, f := range publish(30) {
		if _, err := f.Wait(ctx); err != nil {
			t.Fatalf("an order before the outage: %v", err)
		}
	}

	sc.Cut()
	sc.WaitApart()
	during := publish(20)
	sc.Restore()
	sc.WaitReady()
	for i, f := range during {
		if _, err := f.Wait(ctx); err != nil {
			t.Fatalf("order %d published during the outage: %v", i, err)
		}
	}
	saw.waitFor(t, ctx, "orders handled", "orders", sent)
}
