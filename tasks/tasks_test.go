package tasks_test

import (
	"context"
	"testing"
	"time"

	"github.com/corral-go/corral/internal/natstest"
	"github.com/corral-go/corral/tasks"
)

// Two workers with different capacities complete every task once, and
// neither ever runs more than it may.
func TestWorkersCompleteEveryTaskOnce(t *testing.T) {
	t.Parallel()
	srv := natstest.RunServer(t)
	l := newLedger()
	h := func(capacity int) tasks.Handler {
		var mu = make(chan struct{}, capacity)
		return tasks.HandlerFunc(func(ctx context.Context, task *tasks.Task) error {
			select {
			case mu <- struct{}{}:
			default:
				t.Errorf("worker ran more than its %d tasks at once", capacity)
			}
			defer func() { <-mu }()
			l.start(task.ID())
			time.Sleep(time.Millisecond) // a task does some work
			l.complete(task.ID())
			return nil
		})
	}
	const n = 300
	a := startWorker(t, srv.URL(), "q", tasks.Config{MaxConcurrency: 3}, h(3), nil)
	b := startWorker(t, srv.URL(), "q", tasks.Config{MaxConcurrency: 20}, h(20), nil)
	enqueue(t, natstest.Connect(t, srv.URL()), tasks.Config{}, "q", n)
	l.waitCompleted(t, n, 60*time.Second)
	if _, twice := l.counts(); twice != 0 {
		t.Fatalf("%d tasks completed more than once", twice)
	}
	natstest.Eventually(t, 10*time.Second, func() bool {
		return a.w.Status().Counters.Completed+b.w.Status().Counters.Completed == n
	}, func() string {
		return "the workers' counters do not add up to the tasks completed"
	})
	if a.w.Status().Counters.Completed == 0 || b.w.Status().Counters.Completed == 0 {
		t.Fatalf("one worker did everything: %+v, %+v", a.w.Status().Counters, b.w.Status().Counters)
	}
	for _, w := range []*worker{a, b} {
		if err := w.stop(); err != nil && err != context.Canceled {
			t.Fatalf("stop: %v", err)
		}
	}
}
