package tasks_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/corral-go/corral/connection"
	"github.com/corral-go/corral/internal/natstest"
	"github.com/corral-go/corral/tasks"
)

// enqueueOne enqueues a task with id on queue q as EnqueueTask does, and
// returns what its Enqueued's Wait says.
func enqueueOne(t *testing.T, nc *nats.Conn, id string, opts ...tasks.Option) error {
	t.Helper()
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	m, err := tasks.NewMessage("q", []byte(id), 1<<20, append(opts, tasks.WithID(id))...)
	if err != nil {
		t.Fatal(err)
	}
	ack, perr := js.PublishMsg(ctx, m)
	e := tasks.Track("q", tasks.Config{}, m, connection.NewFixed(nc), func(context.Context) (*jetstream.PubAck, error) { return ack, perr })
	if e.ID() != id {
		t.Fatalf("Enqueued.ID %q, want %q", e.ID(), id)
	}
	return e.Wait(ctx)
}

// wantDuplicate fails t unless err is a *DuplicateError of task id in
// state.
func wantDuplicate(t *testing.T, err error, id string, state tasks.State) *tasks.DuplicateError {
	t.Helper()
	var dup *tasks.DuplicateError
	if !errors.As(err, &dup) || !errors.Is(err, tasks.ErrDuplicate) || dup.ID != id || dup.State != state {
		t.Fatalf("enqueue %s again: %v, want a duplicate %s", id, err, state)
	}
	return dup
}

// A task enqueued under the id of one the queue has is refused, with the
// state of the one it has: waiting, scheduled, running (and by whom), or
// completed.
func TestDuplicateStates(t *testing.T) {
	t.Parallel()
	srv := natstest.RunServer(t)
	nc := natstest.Connect(t, srv.URL())
	declareQueue(t, nc, tasks.Config{}, "q")
	for _, id := range []string{"waits", "runs", "completes"} {
		if err := enqueueOne(t, nc, id); err != nil {
			t.Fatal(err)
		}
	}
	wantDuplicate(t, enqueueOne(t, nc, "waits"), "waits", tasks.StateWaiting)
	at := time.Now().Add(time.Hour)
	if err := enqueueOne(t, nc, "later", tasks.At(at)); err != nil {
		t.Fatal(err)
	}
	if dup := wantDuplicate(t, enqueueOne(t, nc, "later", tasks.WithPriority(tasks.High)), "later", tasks.StateScheduled); !dup.At.Equal(at) {
		t.Errorf("the scheduled duplicate runs at %v, want %v", dup.At, at)
	}

	release := make(chan struct{})
	defer close(release)
	started := make(chan string, 3)
	cfg := tasks.Config{Process: "dup-test"}
	w := startWorker(t, srv.URL(), "q", cfg, tasks.HandlerFunc(func(ctx context.Context, task *tasks.Task) error {
		started <- task.ID()
		if task.ID() == "runs" {
			select {
			case <-release:
			case <-ctx.Done():
			}
		}
		return nil
	}), nil)
	for range 3 {
		<-started
	}
	natstest.Eventually(t, 30*time.Second, func() bool { return w.w.Status().Counters.Completed == 2 }, func() string {
		return fmt.Sprintf("%+v", w.w.Status().Counters)
	})
	dup := wantDuplicate(t, enqueueOne(t, nc, "runs"), "runs", tasks.StateRunning)
	if dup.Worker != w.w.Status().Worker || dup.Process != "dup-test" {
		t.Errorf("the running duplicate: %+v, want worker %s of dup-test", dup, w.w.Status().Worker)
	}
	wantDuplicate(t, enqueueOne(t, nc, "completes"), "completes", tasks.StateCompleted)
	// What was refused never ran: each ran once.
	select {
	case id := <-started:
		t.Fatalf("task %s ran again", id)
	default:
	}
}

// A task that failed for good, enqueued again under its id
// is no duplicate: it runs again as the same task, its attempts going on
// from the failed run's and its failures counted afresh. A copy of the
// failed run itself (its own enqueue, delivered again) is still dropped.
func TestRetryAfterFailureKeepsTheID(t *testing.T) {
	t.Parallel()
	srv := natstest.RunServer(t)
	nc := natstest.Connect(t, srv.URL())
	declareQueue(t, nc, tasks.Config{}, "q")
	var mu sync.Mutex
	var runs []*tasks.Task
	w := startWorker(t, srv.URL(), "q", tasks.Config{MaxFailures: 1}, tasks.HandlerFunc(func(_ context.Context, task *tasks.Task) error {
		mu.Lock()
		defer mu.Unlock()
		runs = append(runs, task)
		if len(runs) == 1 {
			return errors.New("fails for good")
		}
		return nil
	}), nil)
	if err := enqueueOne(t, nc, "job"); err != nil {
		t.Fatal(err)
	}
	// Failed for good once its tombstone says so (the counter counts the
	// failure before it is written).
	wantState(t, tasks.NewQueue("q", tasks.Config{}, connection.NewFixed(nc)), "job", tasks.StateFailed)
	if err := enqueueOne(t, nc, "job"); err != nil {
		t.Fatalf("enqueue the failed task again: %v, want it enqueued", err)
	}
	natstest.Eventually(t, 30*time.Second, func() bool { return w.w.Status().Counters.Completed == 1 }, func() string {
		return fmt.Sprintf("the retry did not complete: %+v", w.w.Status().Counters)
	})
	mu.Lock()
	defer mu.Unlock()
	if len(runs) != 2 || runs[1].ID() != "job" || runs[1].Attempt() != 1 || runs[1].Failures() != 0 {
		t.Fatalf("runs %d; the retry: id %q, attempt %d, failures %d; want id job, attempt 1, no failures",
			len(runs), runs[len(runs)-1].ID(), runs[len(runs)-1].Attempt(), runs[len(runs)-1].Failures())
	}
	wantDuplicate(t, enqueueOne(t, nc, "job"), "job", tasks.StateCompleted)
}

// An enqueue racing the claim of the task it repeats is refused, whatever
// the instant: a copy waiting, held, or done; the task runs once.
func TestEnqueueRacingAClaimRunsOnce(t *testing.T) {
	t.Parallel()
	srv := natstest.RunServer(t)
	nc := natstest.Connect(t, srv.URL())
	declareQueue(t, nc, tasks.Config{}, "q")
	var mu sync.Mutex
	ran := map[string]int{}
	startWorker(t, srv.URL(), "q", tasks.Config{}, tasks.HandlerFunc(func(_ context.Context, task *tasks.Task) error {
		mu.Lock()
		defer mu.Unlock()
		ran[task.ID()]++
		return nil
	}), nil)
	const rounds = 1000
	states := map[tasks.State]int{}
	for i := range rounds {
		id := fmt.Sprintf("race-%d", i)
		if err := enqueueOne(t, nc, id); err != nil {
			t.Fatal(err)
		}
		var dup *tasks.DuplicateError
		if err := enqueueOne(t, nc, id); !errors.As(err, &dup) {
			t.Fatalf("round %d: the second enqueue: %v, want a duplicate", i, err)
		}
		states[dup.State]++
	}
	natstest.Eventually(t, 30*time.Second, func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(ran) == rounds
	}, func() string { return fmt.Sprintf("%d of %d ran", len(ran), rounds) })
	mu.Lock()
	defer mu.Unlock()
	for id, n := range ran {
		if n != 1 {
			t.Errorf("task %s ran %d times", id, n)
		}
	}
	t.Logf("duplicates found %v", states)
}

// An enqueue sent again (its ack lost) is one task, and says so: a single
// server checks the sequence before the Msg-Id and refuses the re-send, a
// replicated stream finds the Msg-Id first.
func TestReSentEnqueueIsOneTask(t *testing.T) {
	t.Parallel()
	for _, replicas := range []int{1, 3} {
		t.Run(fmt.Sprintf("R%d", replicas), func(t *testing.T) {
			t.Parallel()
			url := ""
			if replicas == 1 {
				url = natstest.RunServer(t).URL()
			} else {
				url = natstest.RunCluster(t, 3).URLs()
			}
			nc := natstest.Connect(t, url)
			cfg := tasks.Config{Replicas: replicas}
			js := declareQueue(t, nc, cfg, "q")
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			m, err := tasks.NewMessage("q", nil, 1<<20, tasks.WithID("sent-twice"))
			if err != nil {
				t.Fatal(err)
			}
			if _, err := js.PublishMsg(ctx, m); err != nil {
				t.Fatal(err)
			}
			ack, err := js.PublishMsg(ctx, m)
			t.Logf("the re-send: %+v, %v", ack, err)
			e := tasks.Track("q", cfg, m, connection.NewFixed(nc), func(context.Context) (*jetstream.PubAck, error) { return ack, err })
			if err := e.Wait(ctx); err != nil {
				t.Fatalf("the re-sent enqueue: %v, want it enqueued", err)
			}
			s, err := js.Stream(ctx, "TASKS_q")
			if err != nil {
				t.Fatal(err)
			}
			if info, err := s.Info(ctx); err != nil || info.State.Msgs != 1 {
				t.Fatalf("the queue holds %v messages (%v), want one", info.State.Msgs, err)
			}
		})
	}
}
