package corral_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/corral-go/corral"
	"github.com/corral-go/corral/consumer"
	"github.com/corral-go/corral/internal/natstest"
	"github.com/corral-go/corral/kv"
	"github.com/corral-go/corral/stream"
	"github.com/corral-go/corral/supervisor"
	"github.com/corral-go/corral/tasks"
)

// clusterApp is one instance of an application on a cluster: its Client,
// every line it logged (debug and above) and every event.
type clusterApp struct {
	client *corral.Client
	logs   *observer.ObservedLogs
	events *natstest.Recorder
}

// newClusterApp builds an instance of the application of the cluster
// tests on cluster: R3 streams, a JetStream handler that dead-letters to
// a stream of its own and sends what it handles to got, a watched R3
// bucket, and an R3 task queue that dead-letters to the same stream and
// sends each task's data to got.
func newClusterApp(t *testing.T, cluster *natstest.Cluster, i int, got chan<- string) *clusterApp {
	t.Helper()
	r3 := stream.Config{Replicas: 3}
	cfg := corral.Config{Name: fmt.Sprintf("app-%d", i)}
	cfg.Connection.Servers = strings.Split(cluster.URLs(), ",")
	orders, dlq := r3, r3
	orders.Subjects, dlq.Subjects = []string{"orders.>"}, []string{"dlq.>"}
	cfg.Streams = map[string]stream.Config{"ORDERS": orders, "DLQ": dlq}
	cfg.KV = map[string]kv.Config{"settings": {Replicas: 3}}
	cfg.Tasks = map[string]tasks.Config{"render": {Replicas: 3, DeadLetter: "dlq.render"}}
	core, logs := observer.New(zapcore.DebugLevel)
	app := &clusterApp{logs: logs, events: natstest.NewRecorder()}
	c, err := corral.New(cfg, corral.WithLogger(zap.New(core)), corral.WithEventHook(app.events.Hook))
	if err != nil {
		t.Fatal(err)
	}
	app.client = c
	hc := consumer.Config{Subject: "orders.new", JetStream: consumer.JetStream{Stream: "ORDERS", Consumer: "fulfil", DeadLetter: "dlq.fulfil"}}
	if err := c.Handle("fulfil", hc, consumer.HandlerFunc(func(_ context.Context, m *consumer.Msg) error {
		got <- string(m.Data())
		return nil
	})); err != nil {
		t.Fatal(err)
	}
	if err := c.HandleTasks("render", tasks.Config{}, tasks.HandlerFunc(func(_ context.Context, task *tasks.Task) error {
		got <- string(task.Data())
		return nil
	})); err != nil {
		t.Fatal(err)
	}
	settings, err := c.KV("settings")
	if err != nil {
		t.Fatal(err)
	}
	w, err := settings.Watch("settings-watch", kv.WatchConfig{}, func(context.Context, kv.Entry[[]byte]) error { return nil })
	if err != nil {
		t.Fatal(err)
	}
	if err := c.AddWatch(w); err != nil {
		t.Fatal(err)
	}
	return app
}

// startClusterApps starts n instances of the application at once, and
// waits until every one is ready. What their handlers handle goes to
// got.
func startClusterApps(t *testing.T, cluster *natstest.Cluster, n int, got chan<- string) []*clusterApp {
	t.Helper()
	apps := make([]*clusterApp, n)
	for i := range apps {
		apps[i] = newClusterApp(t, cluster, i, got)
	}
	var start sync.WaitGroup
	start.Add(1)
	for _, app := range apps {
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() {
			start.Wait()
			done <- app.client.Run(ctx)
		}()
		t.Cleanup(func() {
			cancel()
			if err := <-done; err != nil {
				t.Errorf("%s: Run: %v", app.client, err)
			}
		})
	}
	start.Done()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	for _, app := range apps {
		if err := app.client.Ready(ctx); err != nil {
			t.Fatalf("%s: %v\n%s", app.client, err, app.client.Status())
		}
	}
	return apps
}

// A fresh three-node cluster starts three instances of an application
// at once with no error and no restart, as a fresh server does: every
// stream, bucket, consumer and task queue is declared while the others
// are, none is reported lost, and a task enqueued then runs.
func TestFreshClusterStartsCleanly(t *testing.T) {
	t.Parallel()
	cluster := natstest.RunCluster(t, 3)
	got := make(chan string, 100)
	apps := startClusterApps(t, cluster, 3, got)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	f, err := apps[0].client.Enqueue(ctx, "render", []byte("first task"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Wait(ctx); err != nil {
		t.Fatalf("enqueue: %v", err)
	}
	waitHandled(t, ctx, got, 1)
	for _, app := range apps {
		for _, e := range app.logs.All() {
			if e.Level >= zapcore.ErrorLevel {
				t.Errorf("%s logged an ERROR on a fresh cluster: %s %v", app.client, e.Message, e.ContextMap())
			}
		}
		for _, e := range app.events.Events() {
			switch e := e.(type) {
			case supervisor.ChildFailed:
				t.Errorf("%s: a child failed on a fresh cluster: %s: %v", app.client, e.Child, e.Err)
			case kv.BucketRecreated:
				t.Errorf("%s: a brand-new bucket was reported recreated: %+v", app.client, e)
			case consumer.ConsumerRecreated:
				t.Errorf("%s: a brand-new consumer was reported recreated: %+v", app.client, e)
			}
		}
	}
}

// A node of the cluster is lost under three running instances: the one
// that leads the handler's consumer, where every instance's pull requests
// wait. Each affected child reports it as one episode, a warning saying
// what happened and then its recovery, with no error and no restart, and
// every order published before and after is handled.
func TestNodeLossIsOneEpisode(t *testing.T) {
	t.Parallel()
	cluster := natstest.RunCluster(t, 3)
	const orders = 20
	got := make(chan string, 5*orders) // room for redeliveries: a handler never waits on it
	apps := startClusterApps(t, cluster, 3, got)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	js := natstest.JetStream(t, cluster.URLs())
	info, err := js.Consumer(ctx, "ORDERS", "fulfil")
	if err != nil {
		t.Fatal(err)
	}
	publish := func(from, to int) {
		t.Helper()
		for i := from; i < to; i++ {
			if _, err := apps[i%len(apps)].client.PublishSync(ctx, "orders.new", []byte(fmt.Sprint(i))); err != nil {
				t.Fatalf("publish %d: %v", i, err)
			}
		}
	}
	publish(0, orders/2)
	before := make([]int, len(apps))
	for i, app := range apps {
		before[i] = app.logs.Len()
	}
	stopNode(t, cluster, info.CachedInfo().Cluster.Leader)
	publish(orders/2, orders)
	waitHandled(t, ctx, got, orders)
	// Once the new leader has every instance's requests, each instance
	// has found out what it lost (or lost nothing it had to find out).
	var waiting int
	natstest.Eventually(t, 30*time.Second, func() bool {
		info, err := js.Consumer(ctx, "ORDERS", "fulfil")
		waiting = 0
		if err == nil {
			waiting = info.CachedInfo().NumWaiting
		}
		return waiting >= len(apps)
	}, func() string {
		return fmt.Sprintf("the new leader has %d pull requests, want one per instance", waiting)
	})
	total := 0
	for i, app := range apps {
		since := func() []observer.LoggedEntry { return app.logs.All()[before[i]:] }
		natstest.Eventually(t, 30*time.Second, func() bool {
			_, open := episodes(since())
			return len(open) == 0
		}, func() string {
			_, open := episodes(since())
			return fmt.Sprintf("%s: episodes not ended: %v", app.client, open)
		})
		started, _ := episodes(since())
		total += started
		checkEpisodes(t, app.client.String(), since())
	}
	if total == 0 {
		t.Fatal("no instance reported the node's loss")
	}
}

// waitHandled waits until got has brought n different orders.
func waitHandled(t *testing.T, ctx context.Context, got <-chan string, n int) {
	t.Helper()
	handled := map[string]bool{}
	for len(handled) < n {
		select {
		case d := <-got:
			handled[d] = true
		case <-ctx.Done():
			t.Fatalf("handled %d of %d orders", len(handled), n)
		}
	}
}

// stopNode shuts down the node of cluster named name.
func stopNode(t *testing.T, cluster *natstest.Cluster, name string) {
	t.Helper()
	for i, n := range cluster.Nodes {
		if s := n.Raw(); s != nil && s.Name() == name {
			cluster.Stop(i)
			return
		}
	}
	t.Fatalf("no running node named %s", name)
}

// recoveries names the line that ends the episode each warning begins.
var recoveries = map[string]string{
	"connection.disconnected": "connection.reconnected",
	"consumer.consume_error":  "consumer.consume_recovered",
	"tasks.queue_error":       "tasks.queue_recovered",
}

// episodes counts the episodes logs start, and returns those not ended,
// by source, with the warning that started each.
func episodes(logs []observer.LoggedEntry) (started int, open map[string]string) {
	open = map[string]string{}
	for _, e := range logs {
		source := episodeSource(e)
		if e.Level == zapcore.WarnLevel && recoveries[e.Message] != "" {
			started++
			open[source] = e.Message
		}
		if w, ok := open[source]; ok && recoveries[w] == e.Message {
			delete(open, source)
		}
	}
	return started, open
}

// episodeSource names what logged e: a component, and in it a handler or
// a task queue.
func episodeSource(e observer.LoggedEntry) string {
	return fmt.Sprint(e.ContextMap()["component"], e.ContextMap()["handler"], e.ContextMap()["queue"])
}

// checkEpisodes checks what app logged from a node's loss on: no error,
// no child failed, and from each source (a component, a handler) at most
// one warning, which its recovery follows.
func checkEpisodes(t *testing.T, app string, logs []observer.LoggedEntry) {
	t.Helper()
	warned := map[string]int{}
	for _, e := range logs {
		source := episodeSource(e)
		switch {
		case e.Level >= zapcore.ErrorLevel, e.Message == "supervisor.child_failed":
			t.Errorf("%s: %s %s %v", app, e.Level, e.Message, e.ContextMap())
		case e.Level == zapcore.WarnLevel && recoveries[e.Message] == "":
			t.Errorf("%s: a warning that is no episode's start: %s %v", app, e.Message, e.ContextMap())
		case e.Level == zapcore.WarnLevel:
			if warned[source]++; warned[source] > 1 {
				t.Errorf("%s: warning %d from %s in the node's loss: %s %v", app, warned[source], source, e.Message, e.ContextMap())
			}
		}
	}
}
