package tasks_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/corral-go/corral/internal/natstest"
	"github.com/corral-go/corral/tasks"
)

// heldMsgs counts the messages in queue q's held stream: records,
// tombstones, markers and progress.
func heldMsgs(t *testing.T, js jetstream.JetStream) uint64 {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	s, err := js.Stream(ctx, "TASKS_q_HELD")
	if err != nil {
		t.Fatal(err)
	}
	info, err := s.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	return info.State.Msgs
}

// Tasks enqueued on the queue's Subject that end before ClaimAfter cost
// their ack alone: they complete, and leave nothing in the held stream. A
// task still running at ClaimAfter is claimed as it runs: it gets a
// fencing token, and its completion is recorded.
func TestShortTasksRunBeforeTheirClaim(t *testing.T) {
	t.Parallel()
	srv := natstest.RunServer(t)
	nc := natstest.Connect(t, srv.URL())
	cfg := tasks.Config{ClaimAfter: 200 * time.Millisecond}
	tokens := make(chan [2]uint64, 1)
	w := startWorker(t, srv.URL(), "q", cfg, tasks.HandlerFunc(func(ctx context.Context, task *tasks.Task) error {
		if task.ID() != "long" {
			return nil
		}
		first := task.Token()
		deadline := time.Now().Add(30 * time.Second)
		for task.Token() == 0 && time.Now().Before(deadline) {
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-time.After(10 * time.Millisecond):
			}
		}
		tokens <- [2]uint64{first, task.Token()}
		return nil
	}), nil)
	const n = 100
	enqueue(t, nc, cfg, "q", n)
	natstest.Eventually(t, 30*time.Second, func() bool { return w.w.Status().Counters.Completed == n }, func() string {
		return fmt.Sprintf("%+v", w.w.Status().Counters)
	})
	js, _ := jetstream.New(nc)
	if got := heldMsgs(t, js); got != 0 {
		t.Fatalf("the held stream has %d messages after %d short tasks, want none", got, n)
	}
	publish(t, nc, "long")
	select {
	case tok := <-tokens:
		if tok[0] != 0 || tok[1] == 0 {
			t.Fatalf("token at the start %d, later %d: want none, then the claim's", tok[0], tok[1])
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the long task never ran")
	}
	natstest.Eventually(t, 30*time.Second, func() bool { return w.w.Status().Counters.Completed == n+1 }, func() string {
		return fmt.Sprintf("%+v", w.w.Status().Counters)
	})
	assertCompletedOnce(t, srv.URL(), 1, func(string) bool { return true })
}

// A task run before its claim that fails, sets a result or reports
// progress is claimed first, and then goes on as any claimed task: the
// failure is retried with its attempt counted, the result kept.
func TestLazyRunsClaimWhatNeedsARecord(t *testing.T) {
	t.Parallel()
	srv, nc, q := queueOn(t)
	var mu sync.Mutex
	attempts := map[string][]int{}
	cfg := tasks.Config{Backoff: []time.Duration{10 * time.Millisecond}}
	w := startWorker(t, srv.URL(), "q", cfg, tasks.HandlerFunc(func(ctx context.Context, task *tasks.Task) error {
		mu.Lock()
		attempts[task.ID()] = append(attempts[task.ID()], task.Attempt())
		mu.Unlock()
		switch task.ID() {
		case "fails":
			if task.Attempt() == 0 {
				return errors.New("first run fails")
			}
		case "result":
			return task.SetResult([]byte("forty-two"))
		case "progress":
			return task.Progress([]byte("half"))
		}
		return nil
	}), nil)
	for _, id := range []string{"fails", "result", "progress"} {
		publish(t, nc, id)
	}
	natstest.Eventually(t, 30*time.Second, func() bool { return w.w.Status().Counters.Completed == 3 }, func() string {
		return fmt.Sprintf("%+v", w.w.Status().Counters)
	})
	mu.Lock()
	if a := attempts["fails"]; len(a) != 2 || a[0] != 0 || a[1] != 1 {
		t.Errorf("attempts of the failing task %v, want [0 1]", a)
	}
	mu.Unlock()
	if c := w.w.Status().Counters; c.Failed != 1 {
		t.Errorf("counters %+v, want one failure", c)
	}
	if i := wantState(t, q, "result", tasks.StateCompleted); string(i.Result) != "forty-two" {
		t.Errorf("result %q, want forty-two", i.Result)
	}
	if i := wantState(t, q, "progress", tasks.StateCompleted); string(i.Progress) != "half" {
		t.Errorf("progress %q, want half", i.Progress)
	}
}

// A task enqueued on the queue's Subject and cancelled before a worker
// takes it never runs; one cancelled while it runs before its claim is
// cut short with ErrCancelled.
func TestCancelReachesLazyRuns(t *testing.T) {
	t.Parallel()
	srv, nc, q := queueOn(t)
	publish(t, nc, "waits")
	if _, err := cancel(t, q, "waits"); err != nil {
		t.Fatal(err)
	}
	started := make(chan string, 2)
	causes := make(chan error, 1)
	w := startWorker(t, srv.URL(), "q", tasks.Config{}, tasks.HandlerFunc(func(ctx context.Context, task *tasks.Task) error {
		started <- task.ID()
		if task.ID() == "runs" {
			<-ctx.Done()
			causes <- context.Cause(ctx)
		}
		return ctx.Err()
	}), nil)
	natstest.Eventually(t, 30*time.Second, func() bool { return w.w.Status().Counters.Cancelled == 1 }, func() string {
		return fmt.Sprintf("the cancelled copy was not dropped: %+v", w.w.Status().Counters)
	})
	publish(t, nc, "runs")
	if id := <-started; id != "runs" {
		t.Fatalf("%s ran, want runs alone", id)
	}
	if _, err := cancel(t, q, "runs"); err != nil {
		t.Fatal(err)
	}
	select {
	case cause := <-causes:
		if !errors.Is(cause, tasks.ErrCancelled) {
			t.Fatalf("the run's cause %v, want ErrCancelled", cause)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the running task was never cancelled")
	}
	natstest.Eventually(t, 30*time.Second, func() bool { return w.w.Status().Counters.Cancelled == 2 }, func() string {
		return fmt.Sprintf("%+v", w.w.Status().Counters)
	})
	wantState(t, q, "runs", tasks.StateCancelled)
}
