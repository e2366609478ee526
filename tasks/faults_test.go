package tasks_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/corral-go/corral/connection"
	"github.com/corral-go/corral/internal/natstest"
	"github.com/corral-go/corral/supervisor"
	"github.com/corral-go/corral/tasks"
)

// faultConfig renews every 300ms and keeps a lease 5s: longer than a
// server restart or a leader election, which must not cost any lease.
// It claims every task first: the tests count the records of completions,
// which tasks run before their claim do not leave.
var faultConfig = tasks.Config{MaxConcurrency: 10, Heartbeat: 300 * time.Millisecond, LeaseTTL: 5 * time.Second,
	ClaimWait: 2 * time.Second, ClaimAfter: -1, KeepCompleted: time.Minute, SweepEvery: time.Second}

// slowHandler completes each task after a moment, so that a fault finds
// tasks running.
func slowHandler() tasks.Handler { return slowHandlerFor(20 * time.Millisecond) }

// slowHandlerFor completes each task after d, or when its run is stopped.
func slowHandlerFor(d time.Duration) tasks.Handler {
	return tasks.HandlerFunc(func(ctx context.Context, t *tasks.Task) error {
		select {
		case <-time.After(d):
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	})
}

// completed is what the workers completed between them.
func completed(ws ...*worker) uint64 {
	var n uint64
	for _, w := range ws {
		n += w.w.Status().Counters.Completed
	}
	return n
}

// A server restart in the middle of a run loses no task, runs none twice
// and costs no worker its lease.
func TestServerRestartLosesNothing(t *testing.T) {
	t.Parallel()
	srv := natstest.RunServer(t)
	rec := natstest.NewRecorder()
	const n = 300
	a := startWorker(t, srv.URL(), "q", faultConfig, slowHandler(), rec)
	b := startWorker(t, srv.URL(), "q", faultConfig, slowHandler(), rec)
	enqueue(t, natstest.Connect(t, srv.URL()), faultConfig, "q", n)
	natstest.Eventually(t, 60*time.Second, func() bool { return completed(a, b) >= n/4 }, func() string {
		return fmt.Sprintf("%d completed before the restart", completed(a, b))
	})
	srv.Restart()
	natstest.Eventually(t, 120*time.Second, func() bool { return completed(a, b) == n }, func() string {
		return fmt.Sprintf("%d of %d completed after the restart: a %+v, b %+v", completed(a, b), n, a.w.Status(), b.w.Status())
	})
	if lost := natstest.All[tasks.LeaseLost](rec); len(lost) > 0 {
		t.Fatalf("a restart shorter than the lease TTL cost %d leases: %+v", len(lost), lost)
	}
	a.stop()
	b.stop()
	assertCompletedOnce(t, srv.URL(), n, func(string) bool { return true })
}

// On a three-node cluster, leader changes of the queue's streams, its
// consumer and its lease bucket in the middle of a run lose no task, run
// none twice and cost no worker its lease.
func TestLeaderChangesLoseNothing(t *testing.T) {
	t.Parallel()
	cluster := natstest.RunCluster(t, 3)
	cfg := faultConfig
	cfg.Replicas = 3
	rec := natstest.NewRecorder()
	const n = 300
	nc := natstest.Connect(t, cluster.URLs())
	// A node the cluster has just formed with may not yet count as online
	// for placement ("no suitable peers"): declareQueue asks until it does.
	declareQueue(t, nc, cfg, "q")
	a := startWorker(t, cluster.URLs(), "q", cfg, slowHandler(), rec)
	b := startWorker(t, cluster.URLs(), "q", cfg, slowHandler(), rec)
	enqueue(t, nc, cfg, "q", n)
	natstest.Eventually(t, 60*time.Second, func() bool { return completed(a, b) >= n/4 }, func() string {
		return fmt.Sprintf("%d completed before the leader changes", completed(a, b))
	})
	for _, api := range []string{
		"$JS.API.STREAM.LEADER.STEPDOWN.KV_corral_tasks_q",
		"$JS.API.STREAM.LEADER.STEPDOWN.TASKS_q",
		"$JS.API.STREAM.LEADER.STEPDOWN.TASKS_q_HELD",
		"$JS.API.CONSUMER.LEADER.STEPDOWN.TASKS_q.normal", // where the tasks wait
		"$JS.API.CONSUMER.LEADER.STEPDOWN.TASKS_q.back",
	} {
		stepDown(t, nc, api)
	}
	natstest.Eventually(t, 120*time.Second, func() bool { return completed(a, b) == n }, func() string {
		return fmt.Sprintf("%d of %d completed after the leader changes: a %+v, b %+v", completed(a, b), n, a.w.Status(), b.w.Status())
	})
	if lost := natstest.All[tasks.LeaseLost](rec); len(lost) > 0 {
		t.Fatalf("leader changes cost %d leases: %+v", len(lost), lost)
	}
	a.stop()
	b.stop()
	assertCompletedOnce(t, cluster.URLs(), n, func(string) bool { return true })
}

// A worker cut off while another is the recoverer has its tasks put back
// as soon as its lease expires, by the recoverer's watch of the leases:
// no sweep comes in the test's time. The recoverer's events name the
// dead worker's process, read from its records.
func TestExpiredLeaseIsRecoveredByTheWatch(t *testing.T) {
	t.Parallel()
	srv := natstest.RunServer(t)
	nc := natstest.Connect(t, srv.URL())
	cfg := childConfig
	cfg.SweepEvery = time.Hour
	cfg.ClaimAfter = -1 // recovered from their records
	rec := natstest.NewRecorder()
	unblock := make(chan struct{})
	// The recoverer takes one task, which keeps it full until unblocked:
	// every other task goes to the worker that is cut off.
	rcv := startWorker(t, srv.URL(), "q", tasks.Config{MaxConcurrency: 1, Heartbeat: cfg.Heartbeat, LeaseTTL: cfg.LeaseTTL,
		ClaimWait: cfg.ClaimWait, ClaimAfter: cfg.ClaimAfter, KeepCompleted: cfg.KeepCompleted, SweepEvery: cfg.SweepEvery},
		tasks.HandlerFunc(func(ctx context.Context, task *tasks.Task) error {
			if string(task.Data()) == "block" {
				<-unblock
			}
			return nil
		}), rec)
	natstest.Eventually(t, 30*time.Second, func() bool { return rcv.w.Status().Recoverer }, func() string {
		return "the first worker was never elected recoverer"
	})
	publish(t, nc, "block")
	natstest.Eventually(t, 30*time.Second, func() bool { return rcv.w.Status().Held == 1 }, func() string {
		return "the recoverer never took the blocking task"
	})
	cutCfg := cfg
	cutCfg.Process = "cut-off@host-b/9"
	cut := startWorker(t, srv.URL(), "q", cutCfg, slowHandlerFor(time.Hour), nil)
	const n = 10
	enqueue(t, nc, cfg, "q", n)
	natstest.Eventually(t, 30*time.Second, func() bool { return cut.w.Status().Counters.Started == n }, func() string {
		return fmt.Sprintf("the second worker started %d of %d", cut.w.Status().Counters.Started, n)
	})
	dead := cut.w.Status().Worker
	cut.nc.Close()
	close(unblock)
	natstest.Eventually(t, 60*time.Second, func() bool { return rcv.w.Status().Counters.Completed == n+1 }, func() string {
		return fmt.Sprintf("the recoverer completed %d of %d: %+v", rcv.w.Status().Counters.Completed, n+1, rcv.w.Status())
	})
	if errs := natstest.All[tasks.QueueError](rec); len(errs) > 0 {
		t.Fatalf("the recoverer reported errors: %+v", errs)
	}
	// The recoverer reports once it has put every task back, which the
	// other worker may have completed by then: wait for the report.
	deadEv, _ := natstest.WaitFor(t, rec, 0, 10*time.Second, func(e tasks.WorkerDead) bool { return e.Worker == dead })
	if deadEv.Process != cutCfg.Process {
		t.Errorf("%+v, want process %q", deadEv, cutCfg.Process)
	}
	recovered, _ := natstest.WaitFor[tasks.TasksRecovered](t, rec, 0, 10*time.Second, nil)
	if recovered.Worker != dead || recovered.Process != cutCfg.Process {
		t.Errorf("TasksRecovered %+v, want worker %s and process %q", recovered, dead, cutCfg.Process)
	}
	rcv.stop()
	assertCompletedOnce(t, srv.URL(), n+1, func(w string) bool { return w != dead })
}

// stepDown asks a stream's or consumer's leader to step down, once a
// leader answers.
func stepDown(t *testing.T, nc *nats.Conn, api string) {
	t.Helper()
	var answer string
	natstest.Eventually(t, 30*time.Second, func() bool { // mid-election: asked again
		resp, err := nc.Request(api, nil, 5*time.Second)
		if answer = fmt.Sprint(err); err == nil {
			answer = string(resp.Data)
		}
		return strings.Contains(answer, `"success":true`)
	}, func() string { return fmt.Sprintf("%s: %s", api, answer) })
}

// A lease lost while the worker stops, in its grace period, cuts its
// tasks off at once, not when the grace ends: the tasks are about to be
// another worker's.
func TestLeaseLostDuringAStopCutsTasksOff(t *testing.T) {
	t.Parallel()
	srv := natstest.RunServer(t)
	nc := natstest.Connect(t, srv.URL())
	cfg := childConfig
	cfg.Restart = supervisor.Policy{ShutdownTimeout: time.Hour}
	started, cancelled := make(chan struct{}), make(chan struct{})
	// released lets a failed run end its handler rather than wait out the
	// hour-long grace.
	released := make(chan struct{})
	w, err := tasks.New("q", cfg, connection.NewFixed(nc), tasks.HandlerFunc(func(ctx context.Context, _ *tasks.Task) error {
		close(started)
		select {
		case <-ctx.Done():
			close(cancelled)
			return ctx.Err()
		case <-released:
			return errors.New("released by the test")
		}
	}))
	if err != nil {
		t.Fatal(err)
	}
	ctx, stop := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- w.Serve(ctx) }()
	defer func() { stop(); close(released); <-served }()
	enqueue(t, natstest.Connect(t, srv.URL()), cfg, "q", 1)
	select {
	case <-started:
	case <-time.After(30 * time.Second):
		t.Fatal("the task never started")
	}
	stop() // the grace is an hour
	nc.Close()
	select {
	case <-cancelled:
	case <-time.After(30 * time.Second):
		t.Fatal("the task still runs 30s after its worker lost the lease")
	}
}

// A worker whose completion gets no answer before it stops counts the
// outcome as unconfirmed, neither completed nor rejected: the server may
// have stored it or not.
func TestUnansweredCompletionIsUnconfirmed(t *testing.T) {
	t.Parallel()
	srv := natstest.RunServer(t)
	proxy := natstest.NewProxy(t, srv.URL())
	cfg := childConfig
	cfg.ClaimAfter = -1 // a run before its claim ends with an ack, not a write awaited
	started, release := make(chan struct{}), make(chan struct{})
	w, err := tasks.New("q", cfg, connection.NewFixed(natstest.Connect(t, proxy.URL())), tasks.HandlerFunc(func(context.Context, *tasks.Task) error {
		close(started)
		<-release
		return nil
	}))
	if err != nil {
		t.Fatal(err)
	}
	ctx, stop := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- w.Serve(ctx) }()
	enqueue(t, natstest.Connect(t, srv.URL()), cfg, "q", 1)
	select {
	case <-started:
	case <-time.After(30 * time.Second):
		stop()
		<-served
		t.Fatal("the task never started")
	}
	proxy.Pause() // the completion and its answer go nowhere
	close(release)
	stop()
	<-served
	c := w.Status().Counters
	if c.Started != 1 || c.Completed != 0 || c.Rejected != 0 || c.Unconfirmed != 1 {
		t.Fatalf("counters %+v; want the one outcome unconfirmed", c)
	}
}
