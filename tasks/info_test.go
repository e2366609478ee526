package tasks_test

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/corral-go/corral/internal/natstest"
	"github.com/corral-go/corral/tasks"
)

// info reads task id of queue q.
func info(t *testing.T, q *tasks.Queue, id string) (tasks.Info, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	return q.Info(ctx, id)
}

// wantState fails t unless task id is in state.
func wantState(t *testing.T, q *tasks.Queue, id string, state tasks.State) tasks.Info {
	t.Helper()
	var i tasks.Info
	var err error
	natstest.Eventually(t, 30*time.Second, func() bool {
		i, err = info(t, q, id)
		return err == nil && i.State == state
	}, func() string { return fmt.Sprintf("task %s: %+v, %v; want %s", id, i, err, state) })
	return i
}

// Info says where each task is: waiting, scheduled (and when), running
// (and who runs it), completed (with its result) or failed (with its last
// error); and that the queue knows no task of an id never enqueued.
func TestInfoStates(t *testing.T) {
	t.Parallel()
	srv, nc, q := queueOn(t)
	if _, err := info(t, q, "never"); !errors.Is(err, tasks.ErrTaskNotFound) {
		t.Fatalf("Info of a task never enqueued: %v, want ErrTaskNotFound", err)
	}
	if _, err := info(t, q, " x"); !errors.Is(err, tasks.ErrInvalidTaskID) {
		t.Fatalf("Info of an invalid id: %v, want ErrInvalidTaskID", err)
	}
	for _, id := range []string{"runs", "completes", "fails"} {
		if err := enqueueOne(t, nc, id); err != nil {
			t.Fatal(err)
		}
	}
	at := time.Now().Add(time.Hour).Round(time.Millisecond)
	if err := enqueueOne(t, nc, "later", tasks.At(at)); err != nil {
		t.Fatal(err)
	}
	wantState(t, q, "runs", tasks.StateWaiting)
	if i := wantState(t, q, "later", tasks.StateScheduled); !i.At.Equal(at) {
		t.Errorf("the scheduled task runs at %v, want %v", i.At, at)
	}
	release := make(chan struct{})
	defer close(release)
	w := startWorker(t, srv.URL(), "q", tasks.Config{MaxFailures: 1, Process: "info-test"}, tasks.HandlerFunc(func(ctx context.Context, task *tasks.Task) error {
		switch task.ID() {
		case "runs":
			select {
			case <-release:
			case <-ctx.Done():
			}
		case "completes":
			return task.SetResult([]byte("the result"))
		case "fails":
			return errors.New("the last error")
		}
		return nil
	}), nil)
	if i := wantState(t, q, "runs", tasks.StateRunning); i.Worker != w.w.Status().Worker || i.Process != "info-test" {
		t.Errorf("the running task: %+v, want it held by %s of info-test", i, w.w.Status().Worker)
	}
	if i := wantState(t, q, "completes", tasks.StateCompleted); string(i.Result) != "the result" || i.Since.IsZero() {
		t.Errorf("the completed task: %+v, want its result and when it ended", i)
	}
	if i := wantState(t, q, "fails", tasks.StateFailed); i.Err != "the last error" || i.Failures != 0 {
		t.Errorf("the failed task: %+v, want its last error", i)
	}
}

// Results are read back by id, each its own task's.
func TestResultReadBack(t *testing.T) {
	t.Parallel()
	srv, nc, q := queueOn(t)
	sum := func(data []byte) []byte { s := sha256.Sum256(data); return s[:] }
	startWorker(t, srv.URL(), "q", tasks.Config{}, tasks.HandlerFunc(func(_ context.Context, task *tasks.Task) error {
		return task.SetResult(sum(task.Data()))
	}), nil)
	const n = 100
	for i := range n {
		if err := enqueueOne(t, nc, fmt.Sprintf("r-%d", i)); err != nil {
			t.Fatal(err)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	wrong := 0
	for i := range n {
		id := fmt.Sprintf("r-%d", i)
		got, err := q.Wait(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		if got.State != tasks.StateCompleted || string(got.Result) != string(sum([]byte(id))) {
			wrong++
		}
	}
	if wrong > 0 {
		t.Fatalf("%d of %d results wrong", wrong, n)
	}
}

// A result past MaxResult is refused, naming both sizes, and the one set
// before it stays; so is one past what max_payload takes.
func TestResultTooLarge(t *testing.T) {
	t.Parallel()
	srv, nc, q := queueOn(t)
	var mu sync.Mutex
	var errs []error
	startWorker(t, srv.URL(), "q", tasks.Config{MaxResult: 64 << 20}, tasks.HandlerFunc(func(_ context.Context, task *tasks.Task) error {
		mu.Lock()
		defer mu.Unlock()
		errs = append(errs, task.SetResult([]byte("kept")), task.SetResult(make([]byte, 2<<20)))
		return nil
	}), nil)
	startWorker(t, srv.URL(), "q2", tasks.Config{MaxResult: 10}, tasks.HandlerFunc(func(_ context.Context, task *tasks.Task) error {
		mu.Lock()
		defer mu.Unlock()
		errs = append(errs, task.SetResult(make([]byte, 11)))
		return nil
	}), nil)
	if err := enqueueOne(t, nc, "big"); err != nil {
		t.Fatal(err)
	}
	if i := wantState(t, q, "big", tasks.StateCompleted); string(i.Result) != "kept" {
		t.Errorf("result %q, want the one set before the refused one", i.Result)
	}
	m, err := tasks.NewMessage("q2", nil, 1<<20, tasks.WithID("small"))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	js := declareQueue(t, nc, tasks.Config{}, "q2")
	if _, err := js.PublishMsg(ctx, m); err != nil {
		t.Fatal(err)
	}
	natstest.Eventually(t, 30*time.Second, func() bool { mu.Lock(); defer mu.Unlock(); return len(errs) == 3 }, func() string {
		return fmt.Sprintf("%d results set", len(errs))
	})
	mu.Lock()
	defer mu.Unlock()
	var tooLarge *tasks.ResultTooLargeError
	if errs[0] != nil || !errors.As(errs[1], &tooLarge) || !errors.Is(errs[1], tasks.ErrResultTooLarge) || tooLarge.Limit >= 1<<20 {
		t.Errorf("results past max_payload: %v, %v; want the first kept, the second refused under 1 MiB", errs[0], errs[1])
	}
	if !errors.As(errs[2], &tooLarge) || tooLarge.Limit != 10 || !strings.Contains(errs[2].Error(), "11 bytes") {
		t.Errorf("a result past max_result: %v, want it refused naming 11 bytes and the limit 10", errs[2])
	}
}

// Wait returns once the task ends, with how it ended; at once for one
// that ended; and it waits for a task enqueued before any worker ran.
func TestWaitForTheEnd(t *testing.T) {
	t.Parallel()
	srv, nc, q := queueOn(t)
	if err := enqueueOne(t, nc, "w"); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	ended := make(chan tasks.Info, 1)
	go func() {
		i, err := q.Wait(ctx, "w")
		if err != nil {
			t.Error(err)
		}
		ended <- i
	}()
	startWorker(t, srv.URL(), "q", tasks.Config{}, tasks.HandlerFunc(func(_ context.Context, task *tasks.Task) error {
		return task.SetResult([]byte("done"))
	}), nil)
	if i := <-ended; i.State != tasks.StateCompleted || string(i.Result) != "done" {
		t.Fatalf("Wait returned %+v, want the task completed with its result", i)
	}
	if i, err := q.Wait(ctx, "w"); err != nil || i.State != tasks.StateCompleted {
		t.Fatalf("Wait for a task that ended: %+v, %v", i, err)
	}
	if _, err := q.Wait(ctx, "never"); !errors.Is(err, tasks.ErrTaskNotFound) {
		t.Fatalf("Wait for a task never enqueued: %v, want ErrTaskNotFound", err)
	}
}
