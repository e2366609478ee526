package main

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/corral-go/corral/connection"
	"github.com/corral-go/corral/supervisor"
	"github.com/corral-go/corral/tasks"
)

// The long-task scenarios compare Corral's task queue with what a plain
// JetStream consumer does for the same work: keep 10,000 held tasks alive
// (per-task in-progress acks, one per task every third of the 30s ack
// wait, as Corral's own JetStream handler and common practice do),
// complete short tasks (claim + complete against consume + ack), and
// hand a dead worker's tasks to another (the ack wait against the lease).

const (
	taskQueue   = "bench"
	taskSubject = "corral.tasks." + taskQueue
	taskStream  = "TASKS_" + taskQueue
	// ackWait is the server's default, and a JetStream handler's.
	ackWait = 30 * time.Second
)

// taskScenarios are the long-running task queue's comparisons; jsNoop is
// the JetStream handler's best setting for a no-op handler.
func taskScenarios(jsNoop jsWork) []scenario {
	return []scenario{
		{
			name: "long-tasks-keepalive", about: "keep-alive messages per minute for 10,000 tasks held by one worker [per-task in-progress acks, a third of the 30s ack wait]",
			unit: "msgs/min", lower: true, quickN: 10_000, fullN: 10_000, quickRounds: 1, fullRounds: 3, noSample: true,
			roundTimeout: 3 * time.Minute, fullOnly: true,
			raw: rawKeepalive, corral: corralKeepalive,
		},
		{
			name: "long-tasks-throughput", about: "claim + run + complete no-op tasks, one worker of 64 (its default prefetch: up to 256 more at hand) [Corral JetStream handler, no-op, 4 workers: its best]",
			unit: "tasks/s", quickN: 5_000, fullN: 20_000, warmup: true,
			raw: corralConsume(jsNoop), corral: corralTasks(64, noop),
		},
		{
			name: "long-tasks-throughput-1ms", about: "claim + run + complete 1ms tasks, 64 at once (its default prefetch) [Corral JetStream handler, 1ms, 64 workers]",
			unit: "tasks/s", quickN: 5_000, fullN: 20_000, warmup: true,
			raw: corralConsume(jsWork{workers: 64, do: sleep1ms, queue: 64}), corral: corralTasks(64, sleep1ms),
		},
		{
			name: "long-tasks-recovery", about: "ms from a worker's death to another taking its 1,000 tasks [plain consumer: the 30s ack wait]",
			unit: "ms", lower: true, quickN: recoveryHeld, fullN: recoveryHeld, quickRounds: 1, fullRounds: 3, noSample: true,
			roundTimeout: 2 * time.Minute, fullOnly: true,
			raw: rawRecovery, corral: corralRecovery,
		},
	}
}

// keepaliveWindow is how long a keep-alive round counts messages.
func keepaliveWindow(e *env) time.Duration {
	if e.quick {
		return 15 * time.Second
	}
	return time.Minute
}

// rawKeepalive holds n messages of a consumer and keeps each alive with
// its own in-progress ack a third of the ack wait after the last, and
// counts those acks over the window.
func rawKeepalive(ctx context.Context, e *env, n int) (sample, error) {
	if err := fillQueue(ctx, e, n); err != nil {
		return sample{}, err
	}
	nc, err := connect(e)
	if err != nil {
		return sample{}, err
	}
	defer nc.Close()
	js, _ := jetstream.New(nc)
	cons, err := js.CreateOrUpdateConsumer(ctx, taskStream, jetstream.ConsumerConfig{Durable: "held",
		AckPolicy: jetstream.AckExplicitPolicy, AckWait: ackWait, MaxAckPending: -1})
	if err != nil {
		return sample{}, err
	}
	var held []jetstream.Msg
	for len(held) < n {
		batch, err := cons.Fetch(n-len(held), jetstream.FetchMaxWait(5*time.Second))
		if err != nil {
			return sample{}, err
		}
		for m := range batch.Messages() {
			held = append(held, m)
		}
	}
	e.startClock()
	sent, window := 0, keepaliveWindow(e)
	tick := time.NewTicker(ackWait / 3)
	defer tick.Stop()
	end := time.After(window)
	for done := false; !done; {
		select {
		case <-tick.C:
			for _, m := range held {
				if m.InProgress() == nil {
					sent++
				}
			}
		case <-end:
			done = true
		case <-ctx.Done():
			return sample{}, ctx.Err()
		}
	}
	e.stopClock()
	for _, m := range held {
		_ = m.Ack()
	}
	return sample{value: float64(sent) / window.Minutes()}, nil
}

// corralKeepalive has one worker hold n tasks and counts the messages its
// lease bucket receives over the window: every keep-alive, whatever it
// holds.
func corralKeepalive(ctx context.Context, e *env, n int) (sample, error) {
	if err := fillQueue(ctx, e, n); err != nil {
		return sample{}, err
	}
	release := make(chan struct{})
	w, err := startTaskWorker(ctx, e, tasks.Config{MaxConcurrency: n}, func(ctx context.Context, _ *tasks.Task) error {
		select {
		case <-release:
		case <-ctx.Done():
		}
		return nil
	})
	if err != nil {
		return sample{}, err
	}
	defer w.stop()
	defer close(release)
	if err := waitCount(ctx, func() int64 { return int64(w.Status().Held) }, n); err != nil {
		return sample{}, fmt.Errorf("held: %w", err)
	}
	var renewals atomic.Int64
	sub, err := w.nc.Subscribe("$KV.corral_tasks_"+taskQueue+".>", func(*nats.Msg) { renewals.Add(1) })
	if err != nil {
		return sample{}, err
	}
	defer sub.Unsubscribe()
	e.startClock()
	window := keepaliveWindow(e)
	select {
	case <-time.After(window):
	case <-ctx.Done():
		return sample{}, ctx.Err()
	}
	e.stopClock()
	return sample{value: float64(renewals.Load()) / window.Minutes()}, nil
}

// corralTasks runs n tasks doing do on one worker that runs workers at
// once, from the first claimed to the last completed.
func corralTasks(workers int, do func()) runFunc {
	return func(ctx context.Context, e *env, n int) (sample, error) {
		if err := fillQueue(ctx, e, n); err != nil {
			return sample{}, err
		}
		e.startClock()
		var fl firstLast
		w, err := startTaskWorker(ctx, e, tasks.Config{MaxConcurrency: workers}, func(context.Context, *tasks.Task) error {
			do()
			fl.hit()
			return nil
		})
		if err != nil {
			return sample{}, err
		}
		defer w.stop()
		if err := waitCount(ctx, func() int64 { return int64(w.Status().Counters.Completed) }, n); err != nil {
			return sample{}, err
		}
		e.stopClock()
		return sample{value: fl.rate(n), msgs: n}, nil
	}
}

// recoveryHeld is how many tasks the dying worker holds.
const recoveryHeld = 1000

// rawRecovery has a consumer hold n messages and die (its connection
// closed), and times until another consumer receives one of them again:
// the ack wait.
func rawRecovery(ctx context.Context, e *env, n int) (sample, error) {
	if err := fillQueue(ctx, e, n); err != nil {
		return sample{}, err
	}
	dying, err := connect(e)
	if err != nil {
		return sample{}, err
	}
	js, _ := jetstream.New(dying)
	cons, err := js.CreateOrUpdateConsumer(ctx, taskStream, jetstream.ConsumerConfig{Durable: "workers",
		AckPolicy: jetstream.AckExplicitPolicy, AckWait: ackWait, MaxAckPending: -1})
	if err != nil {
		dying.Close()
		return sample{}, err
	}
	for got := 0; got < n; {
		batch, err := cons.Fetch(n-got, jetstream.FetchMaxWait(5*time.Second))
		if err != nil {
			dying.Close()
			return sample{}, err
		}
		for range batch.Messages() {
			got++
		}
	}
	survivor, err := connect(e)
	if err != nil {
		dying.Close()
		return sample{}, err
	}
	defer survivor.Close()
	sjs, _ := jetstream.New(survivor)
	scons, err := sjs.Consumer(ctx, taskStream, "workers")
	if err != nil {
		dying.Close()
		return sample{}, err
	}
	e.startClock()
	dying.Close()
	died := time.Now()
	m, err := scons.Next(jetstream.FetchMaxWait(2 * ackWait))
	if err != nil {
		return sample{}, err
	}
	took := time.Since(died)
	e.stopClock()
	_ = m.Ack()
	return sample{value: float64(took.Milliseconds())}, nil
}

// corralRecovery has a worker hold n tasks and die (its connection cut,
// nothing more written), and times until another worker starts one of
// them: the lease TTL and the recoverer's reaction.
func corralRecovery(ctx context.Context, e *env, n int) (sample, error) {
	if err := fillQueue(ctx, e, n); err != nil {
		return sample{}, err
	}
	release := make(chan struct{})
	defer close(release)
	hold := func(ctx context.Context, _ *tasks.Task) error {
		select {
		case <-release:
		case <-ctx.Done():
		}
		return ctx.Err()
	}
	dying, err := startTaskWorker(ctx, e, tasks.Config{MaxConcurrency: n}, hold)
	if err != nil {
		return sample{}, err
	}
	defer dying.stop()
	if err := waitCount(ctx, func() int64 { return int64(dying.Status().Held) }, n); err != nil {
		return sample{}, fmt.Errorf("held: %w", err)
	}
	var first atomic.Int64
	survivor, err := startTaskWorker(ctx, e, tasks.Config{MaxConcurrency: n}, func(ctx context.Context, t *tasks.Task) error {
		first.CompareAndSwap(0, time.Now().UnixNano())
		return nil
	})
	if err != nil {
		return sample{}, err
	}
	defer survivor.stop()
	e.startClock()
	dying.nc.Close()
	died := time.Now()
	if err := waitCount(ctx, func() int64 { return min(first.Load(), 1) }, 1); err != nil {
		return sample{}, err
	}
	e.stopClock()
	return sample{value: float64(time.Unix(0, first.Load()).Sub(died).Milliseconds())}, nil
}

// fillQueue empties the task queue's streams and enqueues n tasks.
func fillQueue(ctx context.Context, e *env, n int) error {
	nc, err := connect(e)
	if err != nil {
		return err
	}
	defer nc.Close()
	js, err := jetstream.New(nc, jetstream.WithPublishAsyncMaxPending(4000))
	if err != nil {
		return err
	}
	for _, s := range []string{taskStream, taskStream + "_HELD", "KV_corral_tasks_" + taskQueue} {
		_ = js.DeleteStream(ctx, s)
	}
	name, sc := tasks.Config{}.QueueStream(taskQueue)
	if _, err := sc.Declare(ctx, js, name); err != nil {
		return err
	}
	for i := range n {
		if _, err := js.PublishAsync(taskSubject, payload, jetstream.WithMsgID(fmt.Sprintf("t%d", i)), jetstream.WithStallWait(time.Minute)); err != nil {
			return err
		}
	}
	select {
	case <-js.PublishAsyncComplete():
		return nil
	case <-ctx.Done():
		return fmt.Errorf("fill the queue: %w", ctx.Err())
	}
}

// taskWorker is a task queue worker on a connection of its own.
type taskWorker struct {
	*tasks.Worker
	nc   *nats.Conn
	stop func()
}

func startTaskWorker(ctx context.Context, e *env, cfg tasks.Config, h tasks.HandlerFunc) (*taskWorker, error) {
	nc, err := connect(e)
	if err != nil {
		return nil, err
	}
	w, err := tasks.New(taskQueue, cfg, connection.NewFixed(nc), h)
	if err != nil {
		nc.Close()
		return nil, err
	}
	tree := supervisor.NewTree("bench", supervisor.Events{})
	if err := tree.Add(w.String(), w, supervisor.Policy{}); err != nil {
		nc.Close()
		return nil, err
	}
	rctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	done := make(chan struct{})
	go func() { defer close(done); _ = tree.Serve(rctx) }()
	var once sync.Once
	return &taskWorker{Worker: w, nc: nc, stop: func() {
		once.Do(func() { cancel(); <-done; nc.Close() })
	}}, nil
}
