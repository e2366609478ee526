package tasks_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/corral-go/corral/connection"
	"github.com/corral-go/corral/internal/natstest"
	"github.com/corral-go/corral/tasks"
)

// cancel cancels task id of queue q.
func cancel(t *testing.T, q *tasks.Queue, id string) (tasks.State, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	return q.Cancel(ctx, id)
}

// A waiting task and a scheduled one, cancelled, never run, and say so;
// enqueued again under its id, a cancelled task runs; a task that ended
// is left as it is.
func TestCancelWaitingAndScheduled(t *testing.T) {
	t.Parallel()
	srv, nc, q := queueOn(t)
	start := time.Now()
	if err := enqueueOne(t, nc, "waits"); err != nil {
		t.Fatal(err)
	}
	for id, after := range map[string]time.Duration{"at-1s": 2 * time.Second, "at-2s": 3 * time.Second} {
		if err := enqueueOne(t, nc, id, tasks.At(start.Add(after))); err != nil {
			t.Fatal(err)
		}
	}
	if st, err := cancel(t, q, "waits"); err != nil || st != tasks.StateWaiting {
		t.Fatalf("cancel a waiting task: %s, %v", st, err)
	}
	if st, err := cancel(t, q, "at-1s"); err != nil || st != tasks.StateScheduled {
		t.Fatalf("cancel a scheduled task: %s, %v", st, err)
	}
	log := newRunLog()
	w := startWorker(t, srv.URL(), "q", tasks.Config{}, log.handler(), nil)
	// Once the task due after it has run, the cancelled one is past its time.
	runs := log.waitRan(t, 1, 30*time.Second)
	if _, ok := runs["at-2s"]; !ok || len(runs) != 1 {
		t.Fatalf("ran %v, want at-2s alone", runs)
	}
	for _, id := range []string{"waits", "at-1s"} {
		wantState(t, q, id, tasks.StateCancelled)
	}
	wantState(t, q, "at-2s", tasks.StateCompleted)
	if st, err := cancel(t, q, "at-2s"); !errors.Is(err, tasks.ErrFinished) || st != tasks.StateCompleted {
		t.Errorf("cancel a completed task: %s, %v; want completed and ErrFinished", st, err)
	}
	if st, err := cancel(t, q, "never"); err != nil || st != tasks.StateUnknown {
		t.Errorf("cancel an unknown id: %s, %v; want unknown", st, err)
	}
	if err := enqueueOne(t, nc, "waits"); err != nil {
		t.Fatalf("enqueue a cancelled task again: %v", err)
	}
	log.waitRan(t, 2, 30*time.Second)
	wantState(t, q, "waits", tasks.StateCompleted)
	if c := w.w.Status().Counters; c.Completed != 2 {
		t.Errorf("counters %+v, want the two tasks not cancelled completed", c)
	}
}

// A running task's ctx is cancelled, with the cause ErrCancelled, within
// moments, and the task ends as cancelled; a handler that returns nil all
// the same completes it.
func TestCancelRunning(t *testing.T) {
	t.Parallel()
	srv, nc, q := queueOn(t)
	started := make(chan string, 2)
	causes := make(chan error, 2)
	w := startWorker(t, srv.URL(), "q", tasks.Config{}, tasks.HandlerFunc(func(ctx context.Context, task *tasks.Task) error {
		started <- task.ID()
		select {
		case <-ctx.Done():
		case <-time.After(30 * time.Second):
			return errors.New("never cancelled")
		}
		causes <- context.Cause(ctx)
		if task.ID() == "ignores" {
			return nil
		}
		return ctx.Err()
	}), nil)
	for _, id := range []string{"stops", "ignores"} {
		if err := enqueueOne(t, nc, id); err != nil {
			t.Fatal(err)
		}
		<-started
		asked := time.Now()
		if st, err := cancel(t, q, id); err != nil || st != tasks.StateRunning {
			t.Fatalf("cancel a running task: %s, %v", st, err)
		}
		if cause := <-causes; !errors.Is(cause, tasks.ErrCancelled) {
			t.Fatalf("the run's ctx ended with the cause %v, want ErrCancelled", cause)
		}
		t.Logf("%s: cancelled %v after it was asked", id, time.Since(asked).Round(time.Millisecond))
	}
	wantState(t, q, "stops", tasks.StateCancelled)
	wantState(t, q, "ignores", tasks.StateCompleted)
	natstest.Eventually(t, 10*time.Second, func() bool { return w.w.Status().Counters.Cancelled == 1 }, func() string {
		return fmt.Sprintf("%+v", w.w.Status().Counters)
	})
}

// A task cancelled and enqueued again runs again, and a put-back of that
// run (here after a failure) runs too: the cancel's marker, on a subject
// of its own, is again the task's last word once the run's record is gone.
func TestRetryAfterCancelIsPutBackAndRuns(t *testing.T) {
	t.Parallel()
	srv, nc, q := queueOn(t)
	if err := enqueueOne(t, nc, "job"); err != nil {
		t.Fatal(err)
	}
	if _, err := cancel(t, q, "job"); err != nil {
		t.Fatal(err)
	}
	if err := enqueueOne(t, nc, "job"); err != nil {
		t.Fatalf("enqueue the cancelled task again: %v", err)
	}
	runs := make(chan int, 3)
	n := 0
	startWorker(t, srv.URL(), "q", tasks.Config{Backoff: []time.Duration{100 * time.Millisecond}, MaxConcurrency: 1},
		tasks.HandlerFunc(func(context.Context, *tasks.Task) error {
			n++ // one run at a time
			runs <- n
			if n == 1 {
				return errors.New("fails once")
			}
			return nil
		}), nil)
	wantState(t, q, "job", tasks.StateCompleted)
	if got := len(runs); got != 2 {
		t.Fatalf("%d runs, want the failed one and its retry", got)
	}
}

// A running task cancelled keeps its id until its run ends: Info says it
// runs, and enqueued again meanwhile it is a running duplicate, not a
// second run beside the first.
func TestCancelledWhileRunningKeepsItsID(t *testing.T) {
	t.Parallel()
	srv, nc, q := queueOn(t)
	started, release := make(chan struct{}, 2), make(chan struct{})
	for range 2 {
		startWorker(t, srv.URL(), "q", tasks.Config{}, tasks.HandlerFunc(func(ctx context.Context, _ *tasks.Task) error {
			started <- struct{}{}
			<-release // ignores its ctx
			return nil
		}), nil)
	}
	defer close(release)
	if err := enqueueOne(t, nc, "job"); err != nil {
		t.Fatal(err)
	}
	<-started
	if st, err := cancel(t, q, "job"); err != nil || st != tasks.StateRunning {
		t.Fatalf("cancel: %s, %v", st, err)
	}
	if i, err := info(t, q, "job"); err != nil || i.State != tasks.StateRunning {
		t.Fatalf("Info after the cancel, the run still going: %+v, %v; want running", i, err)
	}
	wantDuplicate(t, enqueueOne(t, nc, "job"), "job", tasks.StateRunning)
	select {
	case <-started:
		t.Fatal("a second run started beside the cancelled one")
	default:
	}
}

// Wait gives up when its ctx ends, even with the server gone.
func TestWaitEndsWithItsContext(t *testing.T) {
	t.Parallel()
	srv := natstest.RunServer(t)
	nc := natstest.Connect(t, srv.URL(), nats.MaxReconnects(-1), nats.ReconnectWait(50*time.Millisecond))
	declareQueue(t, nc, tasks.Config{}, "q")
	q := tasks.NewQueue("q", tasks.Config{}, connection.NewFixed(nc))
	startWorker(t, srv.URL(), "q", tasks.Config{}, tasks.HandlerFunc(func(ctx context.Context, _ *tasks.Task) error {
		<-ctx.Done()
		return ctx.Err()
	}), nil)
	if err := enqueueOne(t, nc, "job"); err != nil {
		t.Fatal(err)
	}
	wantState(t, q, "job", tasks.StateRunning)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { _, err := q.Wait(ctx, "job"); done <- err }()
	srv.Shutdown()
	cancel()
	select {
	case err := <-done:
		if !errors.Is(err, context.Canceled) {
			t.Errorf("Wait returned %v, want its ctx's error", err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("Wait still blocked 20s after its ctx ended")
	}
	srv.Start() // the worker then puts its task back as it stops
}
