package tasks

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/corral-go/corral/internal/jsapi"
	"github.com/corral-go/corral/internal/natstest"
	"github.com/corral-go/corral/supervisor"
)

// lowerMaxMsgSize sets the queue stream's max_msg_size, as an operator
// may while workers run (a worker's start declares it again without): the
// held stream keeps none, so a task's claim is stored where its put-back
// in the queue is not.
func lowerMaxMsgSize(t *testing.T, url string, size int32) {
	t.Helper()
	js, _ := jetstream.New(natstest.Connect(t, url))
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	s, err := js.Stream(ctx, "TASKS_q")
	if err != nil {
		t.Fatal(err)
	}
	cfg := s.CachedInfo().Config
	cfg.MaxMsgSize = size
	if _, err := js.UpdateStream(ctx, cfg); err != nil {
		t.Fatal(err)
	}
}

// A put-back the queue's stream refuses for its size ends the task with
// a DeadLettered event that says why, rather than being written again
// for ever with the task's slot held.
func TestPutBackRefusedForSizeEndsTheTask(t *testing.T) {
	t.Parallel()
	srv := natstest.RunServer(t)
	rec := natstest.NewRecorder()
	cfg := fast
	cfg.MaxFailures, cfg.Backoff, cfg.Events = 3, []time.Duration{10 * time.Millisecond}, supervisor.Events{Hook: rec.Hook}
	runs, lowered := make(chan struct{}, 100), make(chan struct{})
	w := serveWorker(t, srv.URL(), cfg, HandlerFunc(func(context.Context, *Task) error {
		runs <- struct{}{}
		<-lowered
		return errors.New("boom")
	}), nil)
	publishTaskData(t, srv.URL(), "job", make([]byte, 1024))
	select {
	case <-runs:
	case <-time.After(30 * time.Second):
		t.Fatal("the task never ran")
	}
	lowerMaxMsgSize(t, srv.URL(), 1024+200) // the task fits, with a put-back's headers it does not
	close(lowered)
	e, _ := natstest.WaitFor(t, rec, 0, 30*time.Second, func(DeadLettered) bool { return true })
	if e.Task != "job" || e.Err == nil || !strings.Contains(e.Err.Error(), "boom") || !strings.Contains(e.Err.Error(), "maximum") {
		t.Fatalf("DeadLettered %+v, want task job with the run's error and the put-back's refusal", e)
	}
	natstest.Eventually(t, 10*time.Second, func() bool { return w.w.Status().Held == 0 }, func() string {
		return fmt.Sprintf("the task still holds its slot: %+v", w.w.Status())
	})
	if n := len(runs); n != 0 {
		t.Fatalf("the task ran %d more times, want once in all", n)
	}
}

// A dead worker's task that the queue's stream no longer takes (its
// max_msg_size lowered since the task was claimed) ends with a
// DeadLettered event; the recoverer puts the worker's other tasks back
// all the same, rather than stopping at the first, sweep after sweep.
func TestRecoveredTaskTooLargeEndsIt(t *testing.T) {
	t.Parallel()
	srv := natstest.RunServer(t)
	for id, size := range map[string]int{"big": 1024, "small": 10} {
		publishTaskData(t, srv.URL(), id, make([]byte, size))
	}
	// The first worker claims both, and dies once told to, before it runs
	// the second.
	claimed, die := make(chan struct{}), make(chan struct{})
	var acked atomic.Int32
	blocks := HandlerFunc(func(ctx context.Context, _ *Task) error { <-ctx.Done(); return ctx.Err() })
	serveWorker(t, srv.URL(), fast, blocks, func(nc *nats.Conn) func(string) bool {
		return func(step string) bool {
			if step != stepAcked || acked.Add(1) != 2 {
				return false
			}
			close(claimed)
			<-die
			nc.Close()
			return true
		}
	})
	select {
	case <-claimed:
	case <-time.After(30 * time.Second):
		t.Fatal("the first worker never claimed both tasks")
	}
	rec := natstest.NewRecorder()
	cfg := fast
	cfg.Events = supervisor.Events{Hook: rec.Hook}
	b := serveWorker(t, srv.URL(), cfg, HandlerFunc(func(context.Context, *Task) error { return nil }), nil)
	natstest.WaitFor(t, rec, 0, 30*time.Second, func(LeaseAcquired) bool { return true }) // it has declared the queue
	lowerMaxMsgSize(t, srv.URL(), 1100)                                                   // big's copy fits, with a put-back's headers it does not
	close(die)
	e, _ := natstest.WaitFor(t, rec, 0, 30*time.Second, func(DeadLettered) bool { return true })
	if e.Task != "big" || !jsapi.TooLarge(e.Err) {
		t.Fatalf("DeadLettered %+v, want task big, refused for its size", e)
	}
	natstest.Eventually(t, 30*time.Second, func() bool { return b.w.Status().Counters.Completed == 1 }, func() string {
		return fmt.Sprintf("the small task was not recovered and completed: %+v", b.w.Status())
	})
}
