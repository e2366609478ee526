package tasks_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/corral-go/corral/connection"
	"github.com/corral-go/corral/internal/natstest"
	"github.com/corral-go/corral/supervisor"
	"github.com/corral-go/corral/tasks"
)

// The test binary doubles as a worker process: with childEnv set to a
// server URL, TestMain runs one worker of queue "q" instead of the tests,
// until it is killed or told to stop (SIGTERM). It says what it does on
// core subjects: "child.started" (worker and task of each run) and
// "child.event" (the kind of each event, and its fields as JSON in the
// header "Fields").
const childEnv = "TASKS_TEST_CHILD_URL"

// childConfig is the queue configuration of the worker processes and of
// the workers the tests run beside them.
var childConfig = tasks.Config{MaxConcurrency: 20, Heartbeat: 300 * time.Millisecond, LeaseTTL: 2 * time.Second,
	ClaimWait: 2 * time.Second, KeepCompleted: time.Minute, SweepEvery: time.Second}

func runChildWorker() int {
	nc, err := nats.Connect(os.Getenv(childEnv), nats.MaxReconnects(-1))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	cfg := childConfig
	if d, _ := time.ParseDuration(os.Getenv("TASKS_TEST_CHILD_CLAIM_WAIT")); d > 0 {
		cfg.ClaimWait = d
	}
	if d, err := time.ParseDuration(os.Getenv("TASKS_TEST_CHILD_CLAIM_AFTER")); err == nil {
		cfg.ClaimAfter = d
	}
	cfg.Events = supervisor.Events{Hook: func(e supervisor.Event) {
		m := nats.NewMsg("child.event")
		m.Data = []byte(e.Kind())
		if fields, err := json.Marshal(supervisor.EventFields(e).Map()); err == nil {
			m.Header.Set("Fields", string(fields))
		}
		_ = nc.PublishMsg(m)
	}}
	taskTime, _ := time.ParseDuration(os.Getenv("TASKS_TEST_CHILD_TASK_TIME"))
	w, err := tasks.New("q", cfg, connection.NewFixed(nc), tasks.HandlerFunc(func(ctx context.Context, t *tasks.Task) error {
		_ = nc.Publish("child.started", []byte(t.Worker()+" "+t.ID()))
		select {
		case <-time.After(taskTime):
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	}))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM)
	defer stop()
	tree := supervisor.NewTree("child", cfg.Events)
	_ = tree.Add(w.String(), w, supervisor.Policy{RestartDelay: 10 * time.Millisecond, ShutdownTimeout: 5 * time.Second})
	_ = tree.Serve(ctx)
	return 0
}

// startChildWorker starts a worker process whose tasks each take
// taskTime, with childConfig but for a claimWait that is not 0, and env
// (TASKS_TEST_CHILD_CLAIM_AFTER=<duration>).
func startChildWorker(t *testing.T, url string, taskTime, claimWait time.Duration, env ...string) *natstest.Child {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), childEnv+"="+url, "TASKS_TEST_CHILD_TASK_TIME="+taskTime.String(),
		"TASKS_TEST_CHILD_CLAIM_WAIT="+claimWait.String())
	cmd.Env = append(cmd.Env, env...)
	return natstest.StartChild(t, cmd)
}

// runs records which worker started which task, as reported on
// child.started by worker processes and by the test's own workers.
type runs struct {
	mu      sync.Mutex
	byTask  map[string][]string
	first   map[string]time.Time // when each worker started its first task
	changed chan struct{}
}

func watchRuns(t *testing.T, nc *nats.Conn) *runs {
	t.Helper()
	r := &runs{byTask: map[string][]string{}, first: map[string]time.Time{}, changed: make(chan struct{})}
	if _, err := nc.Subscribe("child.started", func(m *nats.Msg) {
		worker, task, _ := strings.Cut(string(m.Data), " ")
		r.mu.Lock()
		defer r.mu.Unlock()
		r.byTask[task] = append(r.byTask[task], worker)
		if _, ok := r.first[worker]; !ok {
			r.first[worker] = time.Now()
		}
		close(r.changed)
		r.changed = make(chan struct{})
	}); err != nil {
		t.Fatal(err)
	}
	if err := nc.Flush(); err != nil {
		t.Fatal(err)
	}
	return r
}

// startedBy counts the tasks whose runs include one by a worker for which
// mine says true.
func (r *runs) startedBy(mine func(worker string) bool) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := 0
	for _, workers := range r.byTask {
		for _, w := range workers {
			if mine(w) {
				n++
				break
			}
		}
	}
	return n
}

// workers lists the workers that started a task.
func (r *runs) workers() map[string]time.Time {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := map[string]time.Time{}
	for w, at := range r.first {
		out[w] = at
	}
	return out
}

// reportingHandler completes tasks at once and reports each run on
// child.started, as the worker processes do.
func reportingHandler(nc *nats.Conn) tasks.Handler {
	return tasks.HandlerFunc(func(ctx context.Context, t *tasks.Task) error {
		return nc.Publish("child.started", []byte(t.Worker()+" "+t.ID()))
	})
}

// A worker process killed with SIGKILL while it runs its tasks has them
// taken by another worker within its lease TTL and a small margin, and
// each completes once.
func TestKilledWorkersTasksAreRecovered(t *testing.T) {
	t.Parallel()
	srv := natstest.RunServer(t)
	nc := natstest.Connect(t, srv.URL())
	r := watchRuns(t, nc)
	const n = 20
	child := startChildWorker(t, srv.URL(), time.Hour, 0)
	enqueue(t, nc, childConfig, "q", n)
	natstest.Eventually(t, 30*time.Second, func() bool { return r.startedBy(func(string) bool { return true }) == n },
		func() string {
			return fmt.Sprintf("the worker process started %d of %d tasks", r.startedBy(func(string) bool { return true }), n)
		})
	dead := r.workers()
	survivor := startWorker(t, srv.URL(), "q", childConfig, reportingHandler(nc), nil)
	child.Kill()
	killed := time.Now()
	natstest.Eventually(t, 60*time.Second, func() bool { return survivor.w.Status().Counters.Completed == n }, func() string {
		return fmt.Sprintf("the survivor completed %d of %d: %+v", survivor.w.Status().Counters.Completed, n, survivor.w.Status())
	})
	var recoveredAfter time.Duration
	for w, at := range r.workers() {
		if _, before := dead[w]; !before {
			recoveredAfter = at.Sub(killed)
		}
	}
	t.Logf("first recovered task started %v after the kill (lease TTL %v)", recoveredAfter, childConfig.LeaseTTL)
	if bound := childConfig.LeaseTTL + 3*time.Second; recoveredAfter > bound {
		t.Errorf("the first recovered task started %v after the kill, want within %v (lease TTL + margin)", recoveredAfter, bound)
	}
	if err := survivor.stop(); err != nil && err != context.Canceled {
		t.Fatal(err)
	}
	assertCompletedOnce(t, srv.URL(), n, func(w string) bool { _, died := dead[w]; return !died })
}

// A worker process paused (SIGSTOP) past its lease, then resumed, stops
// its own tasks: the tasks are completed once, by the other worker, and
// none of the paused worker's completions is recorded. It reports the
// loss truly: LeaseLost names the tasks it held, although they finish as
// it resumes; it writes nothing about them once past its lease (no
// completion for the server to refuse); and it reports no failure to
// pull, as the server lost nothing: the process did not run.
func TestPausedWorkerFencesItself(t *testing.T) {
	t.Parallel()
	srv := natstest.RunServer(t)
	nc := natstest.Connect(t, srv.URL())
	r := watchRuns(t, nc)
	events, err := nc.SubscribeSync("child.event")
	if err != nil {
		t.Fatal(err)
	}
	const n = 5
	child := startChildWorker(t, srv.URL(), 3*time.Second, 0)
	enqueue(t, nc, childConfig, "q", n)
	natstest.Eventually(t, 30*time.Second, func() bool { return r.startedBy(func(string) bool { return true }) == n },
		func() string { return "the worker process did not start every task" })
	paused := r.workers()
	child.Pause()
	pausedAt := time.Now()
	survivor := startWorker(t, srv.URL(), "q", childConfig, reportingHandler(nc), nil)
	natstest.Eventually(t, 60*time.Second, func() bool { return survivor.w.Status().Counters.Completed == n }, func() string {
		return fmt.Sprintf("the survivor completed %d of %d", survivor.w.Status().Counters.Completed, n)
	})
	// The pause is part of the scenario, not a wait for anything: longer
	// than two of the server's pull heartbeats (2s), which a worker that
	// does not hear from the server takes as its requests lost.
	time.Sleep(time.Until(pausedAt.Add(3 * childConfig.LeaseTTL)))
	child.Resume()
	for {
		m, err := events.NextMsg(30 * time.Second)
		if err != nil {
			t.Fatalf("the resumed worker never reported losing its lease: %v\n%s", err, child.Output())
		}
		kind, fields := string(m.Data), m.Header.Get("Fields")
		if kind == "tasks.queue_error" || kind == "tasks.completion_rejected" {
			t.Errorf("the resumed worker reported %s %s before it reported its lease lost", kind, fields)
		}
		if kind != "tasks.lease_lost" {
			continue
		}
		var lost struct {
			Worker string
			Held   int
		}
		if err := json.Unmarshal([]byte(fields), &lost); err != nil {
			t.Fatal(err)
		}
		if _, ok := paused[lost.Worker]; !ok || lost.Held != n {
			t.Errorf("LeaseLost %s, want worker %v holding its %d tasks", fields, paused, n)
		}
		break
	}
	if err := survivor.stop(); err != nil && err != context.Canceled {
		t.Fatal(err)
	}
	child.Terminate()
	assertCompletedOnce(t, srv.URL(), n, func(w string) bool { _, p := paused[w]; return !p })
}
