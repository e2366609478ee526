package tasks_test

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/corral-go/corral/internal/natstest"
	"github.com/corral-go/corral/tasks"
)

// listAll pages through the queue's tasks in state, limit at a time, and
// returns their ids and the size of each page.
func listAll(t *testing.T, q *tasks.Queue, state tasks.State, limit int) (ids []string, pages []int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	opts := tasks.ListOptions{State: state, Limit: limit}
	for {
		page, err := q.List(ctx, opts)
		if err != nil {
			t.Fatalf("list %s after %d: %v", state, opts.After, err)
		}
		pages = append(pages, len(page.Tasks))
		for _, i := range page.Tasks {
			if i.State != state {
				t.Fatalf("list %s: task %s is %s", state, i.ID, i.State)
			}
			ids = append(ids, i.ID)
		}
		if page.Next == 0 {
			return ids, pages
		}
		if page.Next <= opts.After {
			t.Fatalf("list %s: next %d does not move on from %d", state, page.Next, opts.After)
		}
		opts.After = page.Next
	}
}

func counts(t *testing.T, q *tasks.Queue) tasks.Counts {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, err := q.Counts(ctx)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// A queue's tasks list page by page, in the order they were stored, each
// once, in the state they are in; the counts agree; workers show with
// their process and what they hold.
func TestListPagesThroughTheQueue(t *testing.T) {
	t.Parallel()
	srv, nc, q := queueOn(t)
	enqueue(t, nc, tasks.Config{}, "q", 120) // on the queue's subject: task-0 to task-119
	var want []string
	for i := range 120 {
		want = append(want, fmt.Sprintf("task-%d", i))
	}
	for i := range 10 {
		id := fmt.Sprintf("et-%d", i)
		if err := enqueueOne(t, nc, id); err != nil {
			t.Fatal(err)
		}
		want = append(want, id)
	}
	for i := range 3 {
		if err := enqueueOne(t, nc, fmt.Sprintf("later-%d", i), tasks.After(time.Hour)); err != nil {
			t.Fatal(err)
		}
	}
	ids, pages := listAll(t, q, tasks.StateWaiting, 50)
	if !slices.Equal(ids, want) || !slices.Equal(pages, []int{50, 50, 30}) {
		t.Fatalf("waiting: %v in pages %v; want the 130 in the order enqueued, in pages of 50, 50, 30", ids, pages)
	}
	if ids, _ := listAll(t, q, tasks.StateScheduled, 0); !slices.Equal(ids, []string{"later-0", "later-1", "later-2"}) {
		t.Fatalf("scheduled: %v", ids)
	}
	if c := counts(t, q); c.Waiting["normal"] != 130 || c.WaitingTotal() != 130 || c.Scheduled != 3 || c.Running != 0 {
		t.Fatalf("counts before any worker: %+v", c)
	}

	// Every task reports progress (which claims it) and waits.
	release := make(chan struct{})
	cfg := tasks.Config{MaxConcurrency: 2, Prefetch: -1, Process: "lister"}
	w := startWorker(t, srv.URL(), "q", cfg, tasks.HandlerFunc(func(ctx context.Context, task *tasks.Task) error {
		if err := task.Progress([]byte("half")); err != nil {
			return err
		}
		select {
		case <-release:
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	}), nil)
	var c tasks.Counts
	natstest.Eventually(t, 30*time.Second, func() bool {
		c = counts(t, q)
		return c.Running == 2 && c.Taken == 0 && c.Waiting["normal"] == 128
	}, func() string { return fmt.Sprintf("counts: %+v, want 2 running and 128 waiting", c) })
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	page, err := q.List(ctx, tasks.ListOptions{State: tasks.StateRunning})
	if err != nil || len(page.Tasks) != 2 || page.Next != 0 {
		t.Fatalf("running: %+v, %v", page, err)
	}
	worker := w.w.Status().Worker
	for _, i := range page.Tasks {
		if i.Worker != worker || i.Process != "lister" || i.Since.IsZero() {
			t.Errorf("running %s: %+v, want it on %s of lister", i.ID, i, worker)
		}
	}
	natstest.Eventually(t, 10*time.Second, func() bool {
		page, err = q.List(ctx, tasks.ListOptions{State: tasks.StateRunning})
		return err == nil && len(page.Tasks) == 2 && string(page.Tasks[0].Progress) == "half" && string(page.Tasks[1].Progress) == "half"
	}, func() string { return fmt.Sprintf("running: %+v, %v; want each with its progress", page.Tasks, err) })
	// The worker stands for election as the recoverer once it has its
	// lease: it is elected a moment later.
	var workers []tasks.WorkerInfo
	natstest.Eventually(t, 30*time.Second, func() bool {
		workers, err = q.Workers(ctx)
		return err == nil && len(workers) == 1 && workers[0].Recoverer
	}, func() string {
		return fmt.Sprintf("workers: %+v, %v; want the one worker, the recoverer", workers, err)
	})
	if w := workers[0]; w.Worker != worker || w.Process != "lister" || w.Held != 2 || w.Renewed.IsZero() {
		t.Fatalf("workers: %+v", workers)
	}

	// One running task and one scheduled are cancelled: the running one
	// leaves a marker and its run's tombstone, and counts once. Released,
	// every other task completes.
	stopped := page.Tasks[0].ID
	for _, id := range []string{stopped, "later-1"} {
		if _, err := q.Cancel(ctx, id); err != nil {
			t.Fatal(err)
		}
	}
	wantState(t, q, stopped, tasks.StateCancelled)
	close(release)
	natstest.Eventually(t, 60*time.Second, func() bool {
		c = counts(t, q)
		return c.Completed == 129 && c.Running == 0 && c.WaitingTotal() == 0
	}, func() string { return fmt.Sprintf("counts: %+v, want 129 completed", c) })
	if c.Cancelled != 2 || c.Scheduled != 2 || c.Failed != 0 {
		t.Fatalf("counts: %+v, want two cancelled and two scheduled", c)
	}
	done, pages := listAll(t, q, tasks.StateCompleted, 100)
	want = slices.DeleteFunc(want, func(id string) bool { return id == stopped })
	slices.Sort(done)
	slices.Sort(want)
	if !slices.Equal(done, want) || !slices.Equal(pages, []int{100, 29}) {
		t.Fatalf("completed: %v in pages %v", done, pages)
	}
	if ids, _ := listAll(t, q, tasks.StateCancelled, 0); !slices.Equal(ids, []string{stopped, "later-1"}) &&
		!slices.Equal(ids, []string{"later-1", stopped}) {
		t.Fatalf("cancelled: %v, want %s and later-1, once each", ids, stopped)
	}
	if ids, _ := listAll(t, q, tasks.StateScheduled, 0); !slices.Equal(ids, []string{"later-0", "later-2"}) {
		t.Fatalf("scheduled after the cancel: %v", ids)
	}
}

// A page is 1 to MaxPageSize tasks of one listable state; anything else
// is refused before the streams are read.
func TestListOptionsAreChecked(t *testing.T) {
	t.Parallel()
	_, _, q := queueOn(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for _, opts := range []tasks.ListOptions{
		{State: tasks.StateWaiting, Limit: -1},
		{State: tasks.StateWaiting, Limit: tasks.MaxPageSize + 1},
		{State: tasks.StateUnknown},
		{State: "bogus"},
	} {
		if _, err := q.List(ctx, opts); err == nil {
			t.Errorf("List(%+v): nil error", opts)
		}
	}
}

// Ten thousand waiting tasks list in pages, each read as the page needs
// it: every task once, in the order enqueued.
func TestListTenThousandWaiting(t *testing.T) {
	t.Parallel()
	_, nc, q := queueOn(t)
	const n = 10_000
	enqueue(t, nc, tasks.Config{}, "q", n)
	ids, pages := listAll(t, q, tasks.StateWaiting, tasks.MaxPageSize)
	if len(pages) != n/tasks.MaxPageSize || len(ids) != n {
		t.Fatalf("%d tasks in %d pages, want %d in %d", len(ids), len(pages), n, n/tasks.MaxPageSize)
	}
	for i, id := range ids {
		if want := fmt.Sprintf("task-%d", i); id != want {
			t.Fatalf("task %d of the listing is %s, want %s", i, id, want)
		}
	}
}
