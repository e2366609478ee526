package tasks_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/corral-go/corral/connection"
	"github.com/corral-go/corral/internal/natstest"
	"github.com/corral-go/corral/stream"
	"github.com/corral-go/corral/supervisor"
	"github.com/corral-go/corral/tasks"
)

// A dead-letter subject that no stream stores is refused when the worker
// starts, naming the field and the subject: a task would otherwise never
// leave the queue.
func TestDeadLetterWithoutAStreamIsRefusedAtStart(t *testing.T) {
	t.Parallel()
	srv := natstest.RunServer(t)
	w, err := tasks.New("q", tasks.Config{DeadLetter: "dead.q"}, connection.NewFixed(natstest.Connect(t, srv.URL())),
		tasks.HandlerFunc(func(context.Context, *tasks.Task) error { return nil }))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	err = w.Serve(ctx)
	if !errors.Is(err, supervisor.ErrInvalidConfig) || !strings.Contains(err.Error(), "dead_letter") || !strings.Contains(err.Error(), "dead.q") {
		t.Fatalf("Serve: %v, want supervisor.ErrInvalidConfig naming dead_letter and dead.q", err)
	}
}

// A worker given the declaration of its dead-letter stream declares it
// before it checks dead_letter, as a handler does: on a fresh cluster no
// worker waits on another process to declare it first. A declaration that
// does not store dead_letter is refused by New, naming the field.
func TestWorkerDeclaresItsDeadLetterStream(t *testing.T) {
	t.Parallel()
	srv := natstest.RunServer(t)
	nc := natstest.Connect(t, srv.URL())
	h := tasks.HandlerFunc(func(context.Context, *tasks.Task) error { return errors.New("boom") })
	wrong := tasks.Config{DeadLetter: "dead.q", DeadLetterStream: "DEAD", CreateDeadLetterStream: &stream.Config{Subjects: []string{"other.>"}}}
	if _, err := tasks.New("q", wrong, connection.NewFixed(nc), h); !errors.Is(err, supervisor.ErrInvalidConfig) ||
		!strings.Contains(err.Error(), "create_dead_letter_stream") || !strings.Contains(err.Error(), "dead.q") {
		t.Fatalf("New: %v, want supervisor.ErrInvalidConfig naming create_dead_letter_stream and dead.q", err)
	}
	cfg := tasks.Config{DeadLetter: "dead.q", DeadLetterStream: "DEAD", CreateDeadLetterStream: &stream.Config{Subjects: []string{"dead.>"}},
		MaxFailures: 1}
	w := startWorker(t, srv.URL(), "q", cfg, h, nil)
	natstest.Eventually(t, 30*time.Second, func() bool { return w.w.Status().Lease == tasks.LeaseStateHeld }, func() string {
		return "the worker never took its lease"
	})
	publish(t, nc, "job")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	js, _ := jetstream.New(nc)
	natstest.Eventually(t, 30*time.Second, func() bool { return deadLetters(ctx, js) == 1 }, func() string {
		return fmt.Sprintf("%d dead letters in the stream the worker declared, want 1", deadLetters(ctx, js))
	})
}

// A task whose dead letter cannot be stored (its stream deleted after the
// worker started) stays in the queue and is reported; once the stream is
// back, it is dead-lettered once and leaves the queue.
func TestDeadLetterNotStoredKeepsTheTask(t *testing.T) {
	t.Parallel()
	srv := natstest.RunServer(t)
	nc := natstest.Connect(t, srv.URL())
	js, _ := jetstream.New(nc)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	dead := jetstream.StreamConfig{Name: "DEAD", Subjects: []string{"dead.>"}}
	if _, err := js.CreateStream(ctx, dead); err != nil {
		t.Fatal(err)
	}
	rec := natstest.NewRecorder()
	cfg := tasks.Config{DeadLetter: "dead.q", MaxFailures: 1, Backoff: []time.Duration{50 * time.Millisecond}}
	w := startWorker(t, srv.URL(), "q", cfg, tasks.HandlerFunc(func(context.Context, *tasks.Task) error {
		return errors.New("boom")
	}), rec)
	natstest.Eventually(t, 30*time.Second, func() bool { return w.w.Status().Lease == tasks.LeaseStateHeld }, func() string {
		return "the worker never took its lease"
	})
	if err := js.DeleteStream(ctx, "DEAD"); err != nil {
		t.Fatal(err)
	}
	publish(t, nc, "job")
	natstest.WaitFor(t, rec, 0, 30*time.Second, func(e tasks.QueueError) bool { return e.Op == "dead-letter" })
	if _, err := js.CreateStream(ctx, dead); err != nil {
		t.Fatal(err)
	}
	natstest.Eventually(t, 30*time.Second, func() bool {
		queue, err := js.Stream(ctx, "TASKS_q")
		return err == nil && queue.CachedInfo().State.Msgs == 0 && w.w.Status().Held == 0 && deadLetters(ctx, js) > 0
	}, func() string { return fmt.Sprintf("the task was not dead-lettered: %+v", w.w.Status()) })
	if n := deadLetters(ctx, js); n != 1 {
		t.Fatalf("%d dead letters, want 1", n)
	}
}

// deadLetters counts the messages in stream DEAD.
func deadLetters(ctx context.Context, js jetstream.JetStream) uint64 {
	s, err := js.Stream(ctx, "DEAD")
	if err != nil {
		return 0
	}
	return s.CachedInfo().State.Msgs
}

// A run past Timeout has its ctx cancelled and counts as a failure; the
// task runs again after its backoff.
func TestTimeoutFailsTheRun(t *testing.T) {
	t.Parallel()
	srv := natstest.RunServer(t)
	nc := natstest.Connect(t, srv.URL())
	cfg := tasks.Config{Timeout: 200 * time.Millisecond, Backoff: []time.Duration{10 * time.Millisecond}}
	w := startWorker(t, srv.URL(), "q", cfg, tasks.HandlerFunc(func(ctx context.Context, task *tasks.Task) error {
		if task.Attempt() == 0 {
			<-ctx.Done()
			return ctx.Err()
		}
		return nil
	}), nil)
	publish(t, nc, "job")
	natstest.Eventually(t, 30*time.Second, func() bool { return w.w.Status().Counters.Completed == 1 }, func() string {
		return fmt.Sprintf("the task was not completed: %+v", w.w.Status())
	})
	if c := w.w.Status().Counters; c.Failed != 1 || c.Started != 2 {
		t.Fatalf("counters %+v, want one failed run (the timeout) and one completed", c)
	}
}

// A lease bucket that disagrees with the worker's configuration is refused
// at start, naming what differs: a different lease_ttl would have workers
// judge one another's leases by different clocks, and a bucket without
// limit markers would hide expired leases from the recoverer.
func TestLeaseBucketThatDisagreesIsRefusedAtStart(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		bucket jetstream.KeyValueConfig
		want   string
	}{
		{"other lease_ttl", jetstream.KeyValueConfig{Bucket: "corral_tasks_q", TTL: 5 * time.Second, LimitMarkerTTL: 5 * time.Second}, "lease_ttl"},
		{"no limit markers", jetstream.KeyValueConfig{Bucket: "corral_tasks_q", TTL: 2 * time.Second}, "limit markers"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			srv := natstest.RunServer(t)
			nc := natstest.Connect(t, srv.URL())
			js, _ := jetstream.New(nc)
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			if _, err := js.CreateKeyValue(ctx, tc.bucket); err != nil {
				t.Fatal(err)
			}
			w, err := tasks.New("q", tasks.Config{LeaseTTL: 2 * time.Second, Heartbeat: 500 * time.Millisecond}, connection.NewFixed(nc),
				tasks.HandlerFunc(func(context.Context, *tasks.Task) error { return nil }))
			if err != nil {
				t.Fatal(err)
			}
			err = w.Serve(ctx)
			if !errors.Is(err, supervisor.ErrInvalidConfig) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Serve: %v, want supervisor.ErrInvalidConfig naming %s", err, tc.want)
			}
		})
	}
}

// A nil handler is refused at New, in an error that names its package once.
func TestNilHandlerReadsOnce(t *testing.T) {
	t.Parallel()
	srv := natstest.RunServer(t)
	_, err := tasks.New("q", tasks.Config{}, connection.NewFixed(natstest.Connect(t, srv.URL())), nil)
	if !errors.Is(err, tasks.ErrNilHandler) || err.Error() != `tasks: nil handler: queue "q"` {
		t.Fatalf("New with a nil handler: %v, want ErrNilHandler reading once", err)
	}
}
