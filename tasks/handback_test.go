package tasks_test

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/corral-go/corral/internal/natstest"
	"github.com/corral-go/corral/tasks"
)

// A task handed back goes to another worker, not straight back to the one
// that handed it back, even when that one is the only worker with room:
// it passes the task over until the other can take it. The hand-back
// counts as no failure.
func TestHandBackMovesTheTaskToAnotherWorker(t *testing.T) {
	t.Parallel()
	srv := natstest.RunServer(t)
	nc := natstest.Connect(t, srv.URL())
	unblock := make(chan struct{})
	var mu sync.Mutex
	var runs []string // worker name and attempt of each run of "job"
	handler := func(name string) tasks.Handler {
		return tasks.HandlerFunc(func(ctx context.Context, task *tasks.Task) error {
			if string(task.Data()) == "block" {
				<-unblock
				return nil
			}
			mu.Lock()
			runs = append(runs, fmt.Sprintf("%s@%d/%d", name, task.Attempt(), task.Failures()))
			mu.Unlock()
			if task.Attempt() == 0 {
				return tasks.HandBack(0)
			}
			return nil
		})
	}
	one := tasks.Config{MaxConcurrency: 1}
	b := startWorker(t, srv.URL(), "q", one, handler("b"), nil)
	publish(t, nc, "block")
	natstest.Eventually(t, 30*time.Second, func() bool { return b.w.Status().Held == 1 }, func() string {
		return "b never took the blocking task"
	})
	a := startWorker(t, srv.URL(), "q", one, handler("a"), nil)
	publish(t, nc, "job")
	// a is the only worker with room: it takes the job, hands it back, and
	// then passes it over while b is busy.
	natstest.Eventually(t, 30*time.Second, func() bool { return a.w.Status().Counters.PassedOver > 0 }, func() string {
		return fmt.Sprintf("a never passed the handed-back job over: %+v", a.w.Status().Counters)
	})
	close(unblock)
	natstest.Eventually(t, 30*time.Second, func() bool { return b.w.Status().Counters.Completed == 2 }, func() string {
		return fmt.Sprintf("b completed %d of the blocking task and the job; a: %+v", b.w.Status().Counters.Completed, a.w.Status().Counters)
	})
	mu.Lock()
	defer mu.Unlock()
	if len(runs) != 2 || runs[0] != "a@0/0" || runs[1] != "b@1/0" {
		t.Fatalf("runs of the job: %v, want a at attempt 0 then b at attempt 1, no failure", runs)
	}
	if got := a.w.Status().Counters.HandedBack; got != 1 {
		t.Fatalf("a handed back %d tasks, want 1", got)
	}
}

// A task handed back is enqueued again under an id of the queue's own:
// another task enqueued with the id "<task>.<attempt>" does not make the
// put-back look like a duplicate, and both complete.
func TestHandBackIDsNeverMatchEnqueuedOnes(t *testing.T) {
	t.Parallel()
	srv := natstest.RunServer(t)
	nc := natstest.Connect(t, srv.URL())
	var mu sync.Mutex
	var done []string
	w := startWorker(t, srv.URL(), "q", tasks.Config{MaxConcurrency: 1}, tasks.HandlerFunc(
		func(ctx context.Context, task *tasks.Task) error {
			if string(task.Data()) == "a" && task.Attempt() == 0 {
				return tasks.HandBack(0)
			}
			mu.Lock()
			done = append(done, fmt.Sprintf("%s@%d", task.Data(), task.Attempt()))
			mu.Unlock()
			return nil
		}), nil)
	publish(t, nc, "a.1")
	publish(t, nc, "a")
	natstest.Eventually(t, 30*time.Second, func() bool { return w.w.Status().Counters.Completed == 2 }, func() string {
		mu.Lock()
		defer mu.Unlock()
		return fmt.Sprintf("completed %v; status %+v", done, w.w.Status())
	})
	mu.Lock()
	defer mu.Unlock()
	if !slices.Equal(done, []string{"a.1@0", "a@1"}) {
		t.Fatalf("runs %v, want a.1 then a's second attempt", done)
	}
}
