package tasks_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/corral-go/corral/tasks"
)

// A task waiting or scheduled is deleted without a trace: it never runs,
// the queue forgets it, and enqueued again it runs. A running task is
// refused, its state said.
func TestDeleteWaitingTask(t *testing.T) {
	t.Parallel()
	srv, nc, q := queueOn(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	for _, e := range []struct {
		id   string
		opts []tasks.Option
	}{{"now", nil}, {"later", []tasks.Option{tasks.After(time.Hour)}}} {
		if err := enqueueOne(t, nc, e.id, e.opts...); err != nil {
			t.Fatal(err)
		}
	}
	for id, want := range map[string]tasks.State{"now": tasks.StateWaiting, "later": tasks.StateScheduled} {
		if was, err := q.Delete(ctx, id); err != nil || was != want {
			t.Fatalf("Delete(%q): %s, %v; want %s", id, was, err, want)
		}
		if _, err := q.Info(ctx, id); !errors.Is(err, tasks.ErrTaskNotFound) {
			t.Fatalf("Info(%q) after its deletion: %v, want ErrTaskNotFound", id, err)
		}
		if _, err := q.Delete(ctx, id); !errors.Is(err, tasks.ErrTaskNotFound) {
			t.Fatalf("a second Delete(%q): %v, want ErrTaskNotFound", id, err)
		}
	}
	if c := counts(t, q); c.WaitingTotal() != 0 || c.Scheduled != 0 {
		t.Fatalf("counts after the deletions: %+v", c)
	}

	release := make(chan struct{})
	defer close(release)
	ran := make(chan string, 10)
	startWorker(t, srv.URL(), "q", tasks.Config{}, tasks.HandlerFunc(func(ctx context.Context, task *tasks.Task) error {
		ran <- task.ID()
		if task.ID() == "runs" {
			select {
			case <-release:
			case <-ctx.Done():
			}
		}
		return nil
	}), nil)
	if err := enqueueOne(t, nc, "runs"); err != nil {
		t.Fatal(err)
	}
	wantState(t, q, "runs", tasks.StateRunning)
	if was, err := q.Delete(ctx, "runs"); !errors.Is(err, tasks.ErrNotWaiting) || was != tasks.StateRunning {
		t.Fatalf("Delete of a running task: %s, %v; want running, ErrNotWaiting", was, err)
	}
	// Deleted, a task leaves no marker: enqueued again, it runs.
	if err := enqueueOne(t, nc, "now"); err != nil {
		t.Fatal(err)
	}
	wantState(t, q, "now", tasks.StateCompleted)
	var got []string
	for len(ran) > 0 {
		got = append(got, <-ran)
	}
	if fmt.Sprint(got) != "[runs now]" {
		t.Fatalf("ran %v, want runs, then now alone", got)
	}
}
