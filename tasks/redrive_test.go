package tasks_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/corral-go/corral/connection"
	"github.com/corral-go/corral/internal/natstest"
	"github.com/corral-go/corral/tasks"
)

// Dead letters list with their last errors, and retried one by one or all
// that match they run again under their ids, each once, their dead
// letters removed; a retry of a task no longer dead-lettered is refused,
// and retrying again does nothing twice.
func TestRetryDeadLetters(t *testing.T) {
	t.Parallel()
	srv := natstest.RunServer(t)
	nc := natstest.Connect(t, srv.URL())
	js, _ := jetstream.New(nc)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if _, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: "DEAD", Subjects: []string{"dead.>"}}); err != nil {
		t.Fatal(err)
	}
	cfg := tasks.Config{DeadLetter: "dead.q", MaxFailures: 1, Backoff: []time.Duration{50 * time.Millisecond}}
	declareQueue(t, nc, cfg, "q")
	q := tasks.NewQueue("q", cfg, connection.NewFixed(nc))
	var failing atomic.Bool
	failing.Store(true)
	var runs atomic.Int32
	startWorker(t, srv.URL(), "q", cfg, tasks.HandlerFunc(func(ctx context.Context, task *tasks.Task) error {
		runs.Add(1)
		if failing.Load() {
			return fmt.Errorf("%s: boom", task.ID())
		}
		return nil
	}), nil)
	ids := []string{"d-0", "d-1", "d-2"}
	for _, id := range ids {
		if err := enqueueOne(t, nc, id); err != nil {
			t.Fatal(err)
		}
	}
	var c tasks.Counts
	natstest.Eventually(t, 30*time.Second, func() bool {
		c = counts(t, q)
		return c.DeadLettered == 3 && c.Failed == 3
	}, func() string { return fmt.Sprintf("counts: %+v, want three dead letters", c) })
	page, err := q.DeadLetters(ctx, tasks.ListOptions{Limit: 2})
	if err != nil || len(page.Tasks) != 2 || page.Next == 0 {
		t.Fatalf("dead letters, first page: %+v, %v", page, err)
	}
	rest, err := q.DeadLetters(ctx, tasks.ListOptions{After: page.Next})
	if err != nil || len(rest.Tasks) != 1 || rest.Next != 0 {
		t.Fatalf("dead letters, second page: %+v, %v", rest, err)
	}
	var listed []string
	for _, i := range append(page.Tasks, rest.Tasks...) {
		if i.State != tasks.StateFailed || i.Err != i.ID+": boom" || i.Failures != 1 {
			t.Errorf("dead letter %+v", i)
		}
		listed = append(listed, i.ID)
	}
	if slices.Sort(listed); !slices.Equal(listed, ids) {
		t.Fatalf("dead letters %v, want %v", listed, ids)
	}

	failing.Store(false)
	before := runs.Load()
	if err := q.Retry(ctx, "d-1"); err != nil {
		t.Fatal(err)
	}
	wantState(t, q, "d-1", tasks.StateCompleted)
	if err := q.Retry(ctx, "d-1"); !errors.Is(err, tasks.ErrTaskNotFound) {
		t.Fatalf("a second retry of d-1: %v, want ErrTaskNotFound", err)
	}
	n, err := q.RetryAll(ctx, func(i tasks.Info) bool { return i.ID == "d-2" })
	if err != nil || n != 1 {
		t.Fatalf("retry d-2: %d, %v", n, err)
	}
	if n, err = q.RetryAll(ctx, nil); err != nil || n != 1 {
		t.Fatalf("retry the rest: %d, %v; want d-0 alone", n, err)
	}
	for _, id := range ids {
		wantState(t, q, id, tasks.StateCompleted)
	}
	if c := counts(t, q); c.DeadLettered != 0 || c.Completed != 3 || c.Failed != 0 {
		t.Fatalf("counts after the retries: %+v", c)
	}
	if n, err := q.RetryAll(ctx, nil); err != nil || n != 0 {
		t.Fatalf("retry with no dead letter: %d, %v", n, err)
	}
	if got := runs.Load() - before; got != 3 {
		t.Fatalf("%d runs after the retries, want one each", got)
	}
}
