package tasks_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/corral-go/corral/internal/natstest"
	"github.com/corral-go/corral/tasks"
)

// A task too large for its claim (one a client published past Enqueue's
// limit, or one that grew by the headers of its put-back) leaves the
// queue with a DeadLettered event naming the refusal, rather than being
// claimed again for ever: the worker's slots stay free for the tasks
// behind it.
func TestTaskTooLargeToClaimLeavesTheQueue(t *testing.T) {
	t.Parallel()
	srv := natstest.RunServer(t)
	nc := natstest.Connect(t, srv.URL())
	rec := natstest.NewRecorder()
	done := newLedger()
	// Claimed first: the claim is what the server refuses.
	cfg := tasks.Config{MaxConcurrency: 2, ClaimWait: time.Second, ClaimAfter: -1, Backoff: []time.Duration{10 * time.Millisecond}}
	w := startWorker(t, srv.URL(), "q", cfg, tasks.HandlerFunc(func(_ context.Context, task *tasks.Task) error {
		if task.ID() == "grows" && task.Failures() == 0 {
			return errors.New("first run fails") // its put-back carries more headers than its claim did
		}
		done.complete(task.ID())
		return nil
	}), rec)
	publishTask(t, nc, "big-0", make([]byte, 1<<20-100))
	publishTask(t, nc, "big-1", make([]byte, 1<<20-100))
	publishTask(t, nc, "grows", make([]byte, 1<<20-300))
	enqueue(t, nc, cfg, "q", 20)
	done.waitCompleted(t, 20, 30*time.Second)
	for _, id := range []string{"big-0", "big-1", "grows"} {
		e, _ := natstest.WaitFor(t, rec, 0, 30*time.Second, func(e tasks.DeadLettered) bool { return e.Task == id })
		if e.Err == nil || !strings.Contains(e.Err.Error(), "maximum payload") {
			t.Errorf("task %s dead-lettered with %v, want the size refusal", id, e.Err)
		}
	}
	js, _ := jetstream.New(nc)
	waitLeft(t, js, w)
}

// waitLeft waits until queue q is empty and w holds no task: every task
// it was given has left the queue.
func waitLeft(t *testing.T, js jetstream.JetStream, w *worker) {
	t.Helper()
	natstest.Eventually(t, 30*time.Second, func() bool {
		s, err := js.Stream(context.Background(), "TASKS_q")
		return err == nil && s.CachedInfo().State.Msgs == 0 && w.w.Status().Held == 0
	}, func() string { return fmt.Sprintf("the tasks did not leave the queue: %+v", w.w.Status()) })
}

// A handler's error of any length ends the task at MaxFailures: what is
// copied of it into the failure's tombstone or its dead letter is
// bounded, so the server never refuses either for its size.
func TestLongErrorEndsTheTask(t *testing.T) {
	t.Parallel()
	for _, deadLetter := range []string{"", "dead.q"} {
		t.Run("dead_letter="+deadLetter, func(t *testing.T) {
			t.Parallel()
			srv := natstest.RunServer(t)
			nc := natstest.Connect(t, srv.URL())
			js := deadStream(t, nc, -1)
			rec := natstest.NewRecorder()
			long := errors.New(strings.Repeat("é", 50<<10)) // 100 KiB
			cfg := tasks.Config{DeadLetter: deadLetter, MaxFailures: 1, Backoff: []time.Duration{10 * time.Millisecond}}
			runs := make(chan struct{}, 100)
			w := startWorker(t, srv.URL(), "q", cfg, tasks.HandlerFunc(func(context.Context, *tasks.Task) error {
				runs <- struct{}{}
				return long
			}), rec)
			publish(t, nc, "job")
			e, _ := natstest.WaitFor(t, rec, 0, 30*time.Second, func(tasks.DeadLettered) bool { return true })
			if e.Task != "job" || e.DeadLetter != deadLetter || !errors.Is(e.Err, long) {
				t.Fatalf("DeadLettered %+v, want task job to %q with the handler's error", e, deadLetter)
			}
			natstest.Eventually(t, 10*time.Second, func() bool { return w.w.Status().Held == 0 }, func() string {
				return fmt.Sprintf("the task still holds its slot: %+v", w.w.Status())
			})
			if n := len(runs); n != 1 {
				t.Fatalf("the task ran %d times, want 1 (max_failures)", n)
			}
			stored := lastErrorStored(t, js, deadLetter)
			if len(stored) > tasks.MaxErrorLen || !strings.HasPrefix(stored, "éé") || !strings.Contains(stored, "bytes cut") {
				t.Fatalf("error stored: %d bytes %q…, want at most %d bytes beginning with the error's text and saying it was cut",
					len(stored), stored[:min(len(stored), 20)], tasks.MaxErrorLen)
			}
		})
	}
}

// deadStream creates stream DEAD, which stores dead letters on dead.>,
// taking messages of at most maxMsgSize bytes (-1: any).
func deadStream(t *testing.T, nc *nats.Conn, maxMsgSize int32) jetstream.JetStream {
	t.Helper()
	js, _ := jetstream.New(nc)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: "DEAD", Subjects: []string{"dead.>"}, MaxMsgSize: maxMsgSize}); err != nil {
		t.Fatal(err)
	}
	return js
}

// lastErrorStored reads the handler's error as the task's dead letter
// (when deadLetter is set), or else its failure's tombstone, stores it.
func lastErrorStored(t *testing.T, js jetstream.JetStream, deadLetter string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	stream, subject := "TASKS_q_HELD", "corral.tasks.q.held.>"
	if deadLetter != "" {
		stream, subject = "DEAD", deadLetter
	}
	s, err := js.Stream(ctx, stream)
	if err != nil {
		t.Fatal(err)
	}
	m, err := s.GetLastMsgForSubject(ctx, subject)
	if err != nil {
		t.Fatalf("read %s: %v", subject, err)
	}
	return m.Header.Get("Corral-Task-Error")
}

// A dead letter the server refuses for its size (its stream's
// max_msg_size) still ends the task at MaxFailures: it leaves the queue
// with a DeadLettered event that names no dead-letter subject and says
// why, instead of being tried again for ever.
func TestDeadLetterRefusedForSizeEndsTheTask(t *testing.T) {
	t.Parallel()
	srv := natstest.RunServer(t)
	nc := natstest.Connect(t, srv.URL())
	js := deadStream(t, nc, 512)
	rec := natstest.NewRecorder()
	cfg := tasks.Config{DeadLetter: "dead.q", MaxFailures: 1, Backoff: []time.Duration{10 * time.Millisecond}}
	runs := make(chan struct{}, 100)
	w := startWorker(t, srv.URL(), "q", cfg, tasks.HandlerFunc(func(context.Context, *tasks.Task) error {
		runs <- struct{}{}
		return errors.New("boom")
	}), rec)
	publishTask(t, nc, "job", make([]byte, 1024))
	e, _ := natstest.WaitFor(t, rec, 0, 30*time.Second, func(tasks.DeadLettered) bool { return true })
	if e.Task != "job" || e.DeadLetter != "" || e.Err == nil || !strings.Contains(e.Err.Error(), "boom") ||
		!strings.Contains(e.Err.Error(), "maximum") {
		t.Fatalf("DeadLettered %+v, want task job, no dead-letter subject, and an error naming the failure and the refusal", e)
	}
	waitLeft(t, js, w)
	if n := len(runs); n != 1 {
		t.Fatalf("the task ran %d times, want 1 (max_failures)", n)
	}
}
