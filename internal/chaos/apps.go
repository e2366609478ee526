package chaos

import (
	"context"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/corral-go/corral"
	"github.com/corral-go/corral/consumer"
	"github.com/corral-go/corral/kv"
	"github.com/corral-go/corral/stream"
	"github.com/corral-go/corral/supervisor"
	"github.com/corral-go/corral/tasks"
)

// Names the workload declares.
const (
	ordersStream  = "ORDERS"
	ordersSubject = "chaos.orders"
	ordersHandler = "orders"
	resultsBucket = "results"
	taskQueue     = "chaosq"
	echoSubject   = "chaos.echo"
)

// app is one application process: a Client and its Run.
type app struct {
	name   string
	client *corral.Client
	cancel context.CancelFunc
	done   chan error
}

// start runs the Client until stop.
func (a *app) start() {
	ctx, cancel := context.WithCancel(context.Background())
	a.cancel, a.done = cancel, make(chan error, 1)
	go func() { a.done <- a.client.Run(ctx) }()
}

// stop cancels Run and returns its error.
func (a *app) stop() error {
	a.cancel()
	return <-a.done
}

// config is what every Client of the workload shares: the stream, the
// bucket and the queue, with fault-sized timeouts (a dead path is noticed
// in 2-3 s, a stop takes at most 3 s).
func config(name string, topo Topology) corral.Config {
	var cfg corral.Config
	cfg.Name = name
	servers, replicas := topo.servers(name), topo.replicas()
	cfg.JetStreamAPI = topo.api()
	cfg.Connection.Servers = servers
	// Only the paths given: a cluster's nodes announce their own URLs,
	// which would go around the paths the nemesis cuts.
	cfg.Connection.Options = []nats.Option{nats.IgnoreDiscoveredServers()}
	cfg.Connection.PingInterval = time.Second
	cfg.Connection.MaxPingsOutstanding = 2
	cfg.Connection.ConnectTimeout = time.Second
	cfg.Connection.ReconnectWait = 100 * time.Millisecond
	cfg.Connection.MaxReconnectWait = 500 * time.Millisecond
	cfg.Restart = supervisor.Policy{RestartDelay: 50 * time.Millisecond, Backoff: time.Second, ShutdownTimeout: 3 * time.Second}
	cfg.Streams = map[string]stream.Config{ordersStream: {Subjects: []string{ordersSubject + ".>"}, Replicas: replicas}}
	// History keeps every rewrite of a key the watcher has not read yet:
	// a redelivered message writes its result again.
	cfg.KV = map[string]kv.Config{resultsBucket: {History: 64, Replicas: replicas}}
	cfg.Tasks = map[string]tasks.Config{taskQueue: {Replicas: replicas, Heartbeat: 500 * time.Millisecond,
		LeaseTTL: 2 * time.Second, ClaimWait: 2 * time.Second, MaxFailures: -1,
		Backoff: []time.Duration{100 * time.Millisecond}, SweepEvery: time.Second}}
	cfg.Publisher.MaxAttempts = -1 // nothing given up: every message is acknowledged in the end
	cfg.Publisher.AckTimeout = 2 * time.Second
	return cfg
}

// newWorker makes an application worker: a JetStream handler and a task
// worker that write their results to the bucket, and a request handler.
func (w *Workload) newWorker(name string) (*app, error) {
	c, err := corral.New(config(name, w.topo))
	if err != nil {
		return nil, err
	}
	results, err := c.KV(resultsBucket)
	if err != nil {
		return nil, err
	}
	orders := consumer.Config{Workers: 8, JetStream: consumer.JetStream{Stream: ordersStream, AckWait: 5 * time.Second}}
	if err := c.Handle(ordersHandler, orders, consumer.HandlerFunc(func(ctx context.Context, m *consumer.Msg) error {
		id := string(m.Data())
		if md := m.Metadata(); md != nil && md.NumDelivered == 1 {
			w.maybePanic(id)
		}
		return w.process(ctx, results, id)
	})); err != nil {
		return nil, err
	}
	if err := c.HandleTasks(taskQueue, tasks.Config{MaxConcurrency: 32}, tasks.HandlerFunc(func(ctx context.Context, t *tasks.Task) error {
		w.runningTasks.Add(1)
		defer w.runningTasks.Add(-1)
		id, fail := w.taskInput(t)
		if fail != nil {
			w.ledger.Run(id, false, time.Now())
			return fail
		}
		if t.Attempt() == 1 {
			w.maybePanic(id)
		}
		select { // the work: a long task, as tasks go in a test
		case <-time.After(taskTime(id)):
		case <-ctx.Done():
			w.ledger.Run(id, false, time.Now())
			return ctx.Err()
		}
		return w.process(ctx, results, id)
	})); err != nil {
		return nil, err
	}
	echo := consumer.Config{Subject: echoSubject, QueueGroup: "echo", Workers: 4}
	if err := c.HandleRequest("echo", echo, consumer.RequestFunc(func(_ context.Context, m *consumer.Msg) (consumer.Reply, error) {
		return consumer.Reply{Data: m.Data()}, nil
	})); err != nil {
		return nil, err
	}
	a := &app{name: name, client: c}
	a.start()
	return a, nil
}

// process writes a message's result and records the run.
func (w *Workload) process(ctx context.Context, results *kv.Bucket[[]byte], id string) error {
	rev, err := results.Put(ctx, id, []byte(id))
	if err == nil {
		w.ledger.Put(id, rev)
	}
	w.ledger.Run(id, err == nil, time.Now())
	return err
}

// maybePanic panics on a quarter of the messages while the panic fault is
// on; callers ask only on a first delivery, so the retry succeeds.
func (w *Workload) maybePanic(id string) {
	if w.panics.Load() && checksum(id)%4 == 0 {
		w.injected.Add(1)
		w.ledger.Run(id, false, time.Now())
		panic("chaos: injected panic for " + id)
	}
}

// taskTime is how long a task works: 50 to 300 ms, fixed by its id.
func taskTime(id string) time.Duration {
	return 50*time.Millisecond + time.Duration(checksum(id)%250)*time.Millisecond
}

func checksum(s string) uint32 {
	var h uint32 = 2166136261 // FNV-1a
	for i := range len(s) {
		h = (h ^ uint32(s[i])) * 16777619
	}
	return h
}
