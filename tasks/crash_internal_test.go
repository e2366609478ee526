package tasks

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/corral-go/corral/connection"
	"github.com/corral-go/corral/internal/natstest"
	"github.com/corral-go/corral/supervisor"
)

// fast is a queue configuration whose leases, claims and sweeps take
// seconds, so that recovery shows within a test. It claims every task
// before it runs: the tests that use it are about the held records.
var fast = Config{MaxConcurrency: 4, Heartbeat: 300 * time.Millisecond, LeaseTTL: time.Second,
	ClaimWait: time.Second, ClaimAfter: -1, KeepCompleted: time.Minute, SweepEvery: time.Second}

// testWorker serves a worker in a tree of its own, on a connection of its
// own, until the test ends or stop is called.
type testWorker struct {
	w    *Worker
	nc   *nats.Conn
	stop func()
}

func serveWorker(t *testing.T, url string, cfg Config, h Handler, crash func(nc *nats.Conn) func(step string) bool) *testWorker {
	t.Helper()
	return serveWorkerWith(t, url, cfg, h, func(w *Worker, nc *nats.Conn) {
		if crash != nil {
			w.crash = crash(nc)
		}
	})
}

// serveWorkerWith is serveWorker with the worker set up by setup, with
// its connection, before it serves.
func serveWorkerWith(t *testing.T, url string, cfg Config, h Handler, setup func(*Worker, *nats.Conn)) *testWorker {
	t.Helper()
	nc, err := nats.Connect(url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	w, err := New("q", cfg, connection.NewFixed(nc), h)
	if err != nil {
		t.Fatal(err)
	}
	setup(w, nc)
	tree := supervisor.NewTree("test", supervisor.Events{})
	if err := tree.Add(w.String(), w, supervisor.Policy{RestartDelay: 10 * time.Millisecond, Backoff: 100 * time.Millisecond,
		ShutdownTimeout: 3 * time.Second}); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = tree.Serve(ctx)
	}()
	var once sync.Once
	stop := func() { once.Do(func() { cancel(); <-done }) }
	t.Cleanup(stop)
	return &testWorker{w: w, nc: nc, stop: stop}
}

// dieAt returns a crash hook that, the first time step comes, cuts the
// worker's connection (as its process dying would) and says so.
func dieAt(step string, died chan<- struct{}) func(*nats.Conn) func(string) bool {
	return func(nc *nats.Conn) func(string) bool {
		var once atomic.Bool
		return func(s string) bool {
			if s != step || !once.CompareAndSwap(false, true) {
				return false
			}
			nc.Close()
			close(died)
			return true
		}
	}
}

// outcomes reads the held stream: for each task, the workers whose
// completion of it was recorded, and the tasks still held.
func outcomes(t *testing.T, url string) (done map[string][]string, held []string) {
	t.Helper()
	nc, err := nats.Connect(url)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, _ := jetstream.New(nc)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	s, err := js.Stream(ctx, fmt.Sprintf(heldStreamTmpl, "TASKS_q"))
	if err != nil {
		t.Fatal(err)
	}
	l := &ledger{held: s, names: newNames("q", fast.withDefaults("q"))}
	done = map[string][]string{}
	err = l.scan(ctx, l.names.heldAll(), true, func(rec record) error {
		switch rec.state {
		case stateDone:
			done[rec.id] = append(done[rec.id], rec.worker)
		case stateHeld:
			held = append(held, rec.id)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return done, held
}

func publishTask(t *testing.T, url, id string) {
	t.Helper()
	publishTaskData(t, url, id, []byte(id))
}

// crashThenTakeOver serves worker a, which dies at step, publishes task
// t1, and once a has died serves worker b and waits until b completed it.
func crashThenTakeOver(t *testing.T, url string, cfg Config, step string, ha, hb Handler) (a, b *testWorker) {
	t.Helper()
	died := make(chan struct{})
	a = serveWorker(t, url, cfg, ha, dieAt(step, died))
	publishTask(t, url, "t1")
	select {
	case <-died:
	case <-time.After(30 * time.Second):
		t.Fatalf("worker a never reached step %q", step)
	}
	b = serveWorker(t, url, cfg, hb, nil)
	natstest.Eventually(t, 30*time.Second, func() bool { return b.w.Status().Counters.Completed == 1 }, func() string {
		return fmt.Sprintf("b: %+v", b.w.Status())
	})
	return a, b
}

// publishTaskData enqueues a task with data under id.
func publishTaskData(t *testing.T, url, id string, data []byte) {
	t.Helper()
	nc, err := nats.Connect(url)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, _ := jetstream.New(nc)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	name, sc := fast.QueueStream("q")
	if _, err := sc.Declare(ctx, js, name); err != nil {
		t.Fatal(err)
	}
	if _, err := js.Publish(ctx, "corral.tasks.q", data, jetstream.WithMsgID(id)); err != nil {
		t.Fatal(err)
	}
}

// A worker that dies at any step of taking, claiming, running, handing
// back or completing a task loses nothing: another worker completes the task, and
// its completion is the one recorded.
func TestCrashAtEveryStepLosesNoTask(t *testing.T) {
	for _, tt := range []struct {
		step     string
		handBack bool          // the dying worker hands the task back
		delay    time.Duration // after this long: its put-back is a schedule
	}{
		{step: stepTaken},
		{step: stepClaimed},
		{step: stepAcked},
		{step: stepRan},
		{step: stepPutBack, handBack: true},
		{step: stepPutBack, handBack: true, delay: 500 * time.Millisecond},
	} {
		t.Run(fmt.Sprintf("%s/%v", tt.step, tt.delay), func(t *testing.T) {
			t.Parallel()
			srv := natstest.RunServer(t)
			handler := func(who string, handBackFirst bool) Handler {
				return HandlerFunc(func(ctx context.Context, task *Task) error {
					if handBackFirst && task.Attempt() == 0 {
						return HandBack(tt.delay)
					}
					return nil
				})
			}
			a, b := crashThenTakeOver(t, srv.URL(), fast, tt.step, handler("a", tt.handBack), handler("b", false))
			a.stop()
			b.stop()
			done, held := outcomes(t, srv.URL())
			if len(done["t1"]) != 1 || len(held) != 0 {
				t.Fatalf("recorded completions of t1: %v, still held: %v; want one completion and nothing held", done["t1"], held)
			}
		})
	}
}

// A worker that dies while it runs a task before claiming it
// (Config.ClaimAfter) loses nothing: the task's copy comes back after
// ClaimWait and another worker completes it, claiming it first (a copy
// delivered again is), so that one completion is recorded, its own. Died
// after the run and before its ack, the task runs twice, the window a
// JetStream handler's message has too; died once the run was claimed (its
// record stored, the copy not yet acked), the claim holds the task until
// the dead lease expires, then it is put back.
func TestCrashDuringALazyRunLosesNoTask(t *testing.T) {
	lazy := fast
	lazy.ClaimAfter = 200 * time.Millisecond
	for _, tt := range []struct {
		step   string
		runFor time.Duration // the dying worker's run
	}{
		{step: stepLazyRan},
		{step: stepPromoted, runFor: time.Hour},
	} {
		t.Run(tt.step, func(t *testing.T) {
			t.Parallel()
			srv := natstest.RunServer(t)
			var ran sync.Map // worker → runs
			handler := func(who string, runFor time.Duration) Handler {
				return HandlerFunc(func(ctx context.Context, task *Task) error {
					n, _ := ran.LoadOrStore(who, new(atomic.Int32))
					n.(*atomic.Int32).Add(1)
					select {
					case <-time.After(runFor):
						return nil
					case <-ctx.Done():
						return ctx.Err()
					}
				})
			}
			a, b := crashThenTakeOver(t, srv.URL(), lazy, tt.step, handler("a", tt.runFor), handler("b", 0))
			bWorker := b.w.Status().Worker
			a.stop()
			b.stop()
			runs := func(who string) int32 {
				if n, ok := ran.Load(who); ok {
					return n.(*atomic.Int32).Load()
				}
				return 0
			}
			if runs("a") != 1 || runs("b") != 1 {
				t.Fatalf("runs: a %d, b %d; want one each", runs("a"), runs("b"))
			}
			done, held := outcomes(t, srv.URL())
			if len(done["t1"]) != 1 || done["t1"][0] != bWorker || len(held) != 0 {
				t.Fatalf("recorded completions of t1: %v, still held: %v; want b's (%s) and nothing held", done["t1"], held, bWorker)
			}
		})
	}
}

// A recoverer that dies while it puts a dead worker's task back leaves it
// for the next recoverer, which finishes the job: the task runs once more
// and its completion is recorded once.
func TestRecovererCrashLosesNoTask(t *testing.T) {
	t.Parallel()
	srv := natstest.RunServer(t)
	completes := HandlerFunc(func(context.Context, *Task) error { return nil })
	// The first worker takes the task and dies before running it.
	diedFirst := make(chan struct{})
	serveWorker(t, srv.URL(), fast, completes, dieAt(stepAcked, diedFirst))
	publishTask(t, srv.URL(), "t1")
	select {
	case <-diedFirst:
	case <-time.After(30 * time.Second):
		t.Fatal("the first worker never took the task")
	}
	// The second becomes the recoverer and dies putting the task back.
	diedRecovering := make(chan struct{})
	a := serveWorker(t, srv.URL(), fast, completes, dieAt(stepPutBack, diedRecovering))
	select {
	case <-diedRecovering:
	case <-time.After(30 * time.Second):
		t.Fatalf("the second worker never recovered the task: %+v", a.w.Status())
	}
	b := serveWorker(t, srv.URL(), fast, completes, nil)
	natstest.Eventually(t, 30*time.Second, func() bool { return b.w.Status().Counters.Completed == 1 }, func() string {
		return fmt.Sprintf("b: %+v", b.w.Status())
	})
	b.stop()
	done, held := outcomes(t, srv.URL())
	if len(done["t1"]) != 1 || len(held) != 0 {
		t.Fatalf("recorded completions of t1: %v, still held: %v; want one completion and nothing held", done["t1"], held)
	}
}

// A worker that writes its completion after its task was put back (it
// paused between checking its lease and writing) is refused by the
// server: the completion recorded is the other worker's, and the late one
// is reported.
func TestLateCompletionIsRejectedByTheServer(t *testing.T) {
	t.Parallel()
	srv := natstest.RunServer(t)
	rec := natstest.NewRecorder()
	cfg := fast
	cfg.Events = supervisor.Events{Hook: rec.Hook}
	cfg.Process = "a@host-a/1"
	started, release := make(chan string, 1), make(chan struct{})
	nc, err := nats.Connect(srv.URL())
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	a, err := New("q", cfg, connection.NewFixed(nc), HandlerFunc(func(ctx context.Context, task *Task) error {
		started <- task.Worker()
		<-release
		return nil
	}))
	if err != nil {
		t.Fatal(err)
	}
	a.unfenced = true
	tree := supervisor.NewTree("test", cfg.Events)
	if err := tree.Add(a.String(), a, supervisor.Policy{RestartDelay: 10 * time.Millisecond, ShutdownTimeout: 3 * time.Second}); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = tree.Serve(ctx) }()
	defer func() { cancel(); <-done }()
	defer close(release)

	publishTask(t, srv.URL(), "t1")
	var holder string
	select {
	case holder = <-started:
	case <-time.After(30 * time.Second):
		t.Fatal("worker a never started the task")
	}
	// a's lease goes (as when it expires), and another worker takes the
	// task and completes it.
	js, _ := jetstream.New(nc)
	kvs, err := js.KeyValue(ctx, "corral_tasks_q")
	if err != nil {
		t.Fatal(err)
	}
	if err := kvs.Delete(ctx, leaseKey(holder)); err != nil {
		t.Fatal(err)
	}
	b := serveWorker(t, srv.URL(), fast, HandlerFunc(func(context.Context, *Task) error { return nil }), nil)
	natstest.Eventually(t, 30*time.Second, func() bool { return b.w.Status().Counters.Completed == 1 }, func() string {
		return fmt.Sprintf("b: %+v", b.w.Status())
	})
	release <- struct{}{}
	ev, _ := natstest.WaitFor[CompletionRejected](t, rec, 0, 30*time.Second, nil)
	if ev.Task != "t1" || ev.Worker != holder || ev.Process != cfg.Process || !errors.Is(ev.Err, ErrFenced) {
		t.Fatalf("got %+v, want t1's completion by %s (%s) refused as fenced", ev, holder, cfg.Process)
	}
	b.stop()
	doneBy, held := outcomes(t, srv.URL())
	if len(doneBy["t1"]) != 1 || doneBy["t1"][0] == holder || len(held) != 0 {
		t.Fatalf("recorded completions of t1: %v (a was %s), still held: %v", doneBy["t1"], holder, held)
	}
}
