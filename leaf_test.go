package corral_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/corral-go/corral"
	"github.com/corral-go/corral/connection"
	"github.com/corral-go/corral/consumer"
	"github.com/corral-go/corral/inspector"
	"github.com/corral-go/corral/internal/natstest"
	"github.com/corral-go/corral/kv"
	"github.com/corral-go/corral/publisher"
	"github.com/corral-go/corral/stream"
	"github.com/corral-go/corral/tasks"
)

// A Client on a leaf node with its own JetStream (domain leaf) uses a
// stream, a bucket and a task queue in its hub (domain hub): all are
// declared in the hub and none in the leaf. Then the leaf link is cut
// until the worker's lease has lost (past the handler's ack wait), and
// restored: every order the publisher had acknowledged is handled, what
// was published during the cut is held and delivered, and every task
// completes once.
func TestLeafNodeClientUsesItsHub(t *testing.T) {
	t.Parallel()
	top := natstest.RunLeafNode(t)
	cfg := corral.Config{Name: "edge"}
	cfg.Connection.Servers = []string{top.Leaf.URL()}
	cfg.JetStreamAPI.Domain = "hub"
	cfg.Streams = map[string]stream.Config{"ORDERS": {Subjects: []string{"orders.>"}}}
	// One bucket of the leaf's own, beside the hub's: two domains from
	// one process.
	cfg.KV = map[string]kv.Config{"settings": {}, "local": {JetStreamAPI: connection.JetStreamAPI{Domain: "leaf"}}}
	cfg.Tasks = map[string]tasks.Config{"render": {Heartbeat: 300 * time.Millisecond, LeaseTTL: time.Second,
		ClaimWait: time.Second, KeepCompleted: time.Minute}}
	events := natstest.NewRecorder()
	c, err := corral.New(cfg, corral.WithEventHook(events.Hook))
	if err != nil {
		t.Fatal(err)
	}
	ledger := newSeen()
	hc := consumer.Config{Subject: "orders.>", JetStream: consumer.JetStream{Stream: "ORDERS", AckWait: 500 * time.Millisecond}}
	if err := c.Handle("fulfil", hc, consumer.HandlerFunc(func(_ context.Context, m *consumer.Msg) error {
		ledger.note("orders", string(m.Data()))
		return nil
	})); err != nil {
		t.Fatal(err)
	}
	// A task takes long enough that the cut finds some running: those
	// stop when the lease is lost, and run again after.
	if err := c.HandleTasks("render", tasks.Config{}, tasks.HandlerFunc(func(ctx context.Context, task *tasks.Task) error {
		select {
		case <-time.After(200 * time.Millisecond):
		case <-ctx.Done():
			return ctx.Err()
		}
		ledger.note("completed", task.ID())
		return nil
	})); err != nil {
		t.Fatal(err)
	}
	ctx := runReady(t, c)

	settings, err := c.KV("settings")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := settings.Put(ctx, "mode", []byte("edge")); err != nil {
		t.Fatalf("Put to the hub's bucket: %v", err)
	}
	var orders []string
	publish := func(n int) []*publisher.Future {
		var fs []*publisher.Future
		for range n {
			id := fmt.Sprintf("order-%d", len(orders))
			orders = append(orders, id)
			f, err := c.Publish(ctx, "orders.new", []byte(id))
			if err != nil {
				t.Fatalf("Publish: %v", err)
			}
			fs = append(fs, f)
		}
		return fs
	}
	for _, f := range publish(50) {
		if _, err := f.Wait(ctx); err != nil {
			t.Fatalf("an order before the cut: %v", err)
		}
	}
	var ids []string
	for i := range 40 {
		id := fmt.Sprintf("task-%d", i)
		ids = append(ids, id)
		e, err := c.EnqueueTask(ctx, "render", nil, tasks.WithID(id))
		if err != nil {
			t.Fatal(err)
		}
		if err := e.Wait(ctx); err != nil {
			t.Fatalf("enqueue %s: %v", id, err)
		}
	}
	ledger.waitFor(t, ctx, "orders before the cut", "orders", orders)

	// What lives where: in the hub, nothing of it in the leaf's own.
	hubJS := natstest.JetStream(t, top.Hub.URL())
	leafJS := natstest.JetStream(t, top.Leaf.URL())
	for _, name := range []string{"ORDERS", "KV_settings", "TASKS_render"} {
		if _, err := hubJS.Stream(ctx, name); err != nil {
			t.Errorf("stream %s in the hub: %v", name, err)
		}
		if _, err := leafJS.Stream(ctx, name); !errors.Is(err, jetstream.ErrStreamNotFound) {
			t.Errorf("stream %s in the leaf's own JetStream: %v, want ErrStreamNotFound", name, err)
		}
	}
	if _, err := hubJS.Consumer(ctx, "ORDERS", "fulfil"); err != nil {
		t.Errorf("the handler's consumer in the hub: %v", err)
	}
	local, err := c.KV("local")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := local.Put(ctx, "site", []byte("edge")); err != nil {
		t.Fatalf("Put to the leaf's own bucket: %v", err)
	}
	if _, err := leafJS.Stream(ctx, "KV_local"); err != nil {
		t.Errorf("the leaf's own bucket in the leaf: %v", err)
	}
	if _, err := hubJS.Stream(ctx, "KV_local"); !errors.Is(err, jetstream.ErrStreamNotFound) {
		t.Errorf("the leaf's own bucket in the hub: %v, want ErrStreamNotFound", err)
	}

	from := events.Len()
	top.Link.Cut()
	top.WaitUnlinked()
	during := publish(20)
	// The leaf's own bucket is there; the hub's cannot be reached: a call
	// fails, it does not hang.
	if e, err := local.Get(ctx, "site"); err != nil || string(e.Value) != "edge" {
		t.Errorf("the leaf's own bucket during the cut: %v, %v", e, err)
	}
	cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	_, err = settings.Get(cctx, "mode")
	cancel()
	t.Logf("a bucket read during the cut: %v", err)
	if !errors.Is(err, nats.ErrNoResponders) || errors.Is(err, kv.ErrBucketNotFound) || !strings.Contains(err.Error(), "domain hub") {
		t.Errorf("a read of the hub's bucket while the leaf link was cut: %v; want no responders from domain hub, not ErrBucketNotFound", err)
	}
	natstest.WaitFor(t, events, from, 30*time.Second, func(e tasks.LeaseLost) bool { return e.Queue == "render" })
	top.Link.Restore()
	top.WaitLinked()

	for i, f := range during {
		if _, err := f.Wait(ctx); err != nil {
			t.Fatalf("order %d published during the cut: %v", i, err)
		}
	}
	ledger.waitFor(t, ctx, "orders", "orders", orders)
	ledger.waitFor(t, ctx, "tasks", "completed", ids)
	q, err := c.Tasks("render")
	if err != nil {
		t.Fatal(err)
	}
	got, err := settings.Get(ctx, "mode")
	if err != nil || string(got.Value) != "edge" {
		t.Errorf("the hub's bucket after the cut: %v, %v", got, err)
	}
	assertCompletedOnce(t, ctx, q, ids)

	// An inspector of the leaf's own JetStream finds the handler's
	// consumer where the handler's status says it is: in the hub.
	in := inspector.New(connection.NewFixed(natstest.Connect(t, top.Leaf.URL())), nil)
	if err := in.PauseHandler(ctx, "edge", "fulfil", time.Now().Add(time.Hour)); err != nil {
		t.Fatalf("PauseHandler: %v", err)
	}
	cons, err := hubJS.Consumer(ctx, "ORDERS", "fulfil")
	if err != nil || !cons.CachedInfo().Paused {
		t.Errorf("the hub's consumer after PauseHandler: paused %v, %v", err == nil && cons.CachedInfo().Paused, err)
	}
}

// assertCompletedOnce waits for each of ids to end, completed, then
// checks the queue's own records: each is recorded completed once. A run
// that returned nil but whose completion was not recorded (its worker's
// lease was lost first) is no completion: the task ran again.
func assertCompletedOnce(t *testing.T, ctx context.Context, q *tasks.Queue, ids []string) {
	t.Helper()
	for _, id := range ids {
		info, err := q.Wait(ctx, id)
		if err != nil || info.State != tasks.StateCompleted {
			t.Fatalf("task %s ended %+v, %v; want completed", id, info, err)
		}
	}
	recorded := map[string]int{}
	for after := uint64(0); ; {
		page, err := q.List(ctx, tasks.ListOptions{State: tasks.StateCompleted, After: after, Limit: tasks.MaxPageSize})
		if err != nil {
			t.Fatalf("list the completed tasks: %v", err)
		}
		for _, info := range page.Tasks {
			recorded[info.ID]++
		}
		if after = page.Next; after == 0 {
			break
		}
	}
	for _, id := range ids {
		if n := recorded[id]; n != 1 {
			t.Errorf("task %s recorded completed %d times, want once", id, n)
		}
	}
	if len(recorded) != len(ids) {
		t.Errorf("%d tasks recorded completed, want %d", len(recorded), len(ids))
	}
}
