package tasks_test

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/corral-go/corral/internal/natstest"
	"github.com/corral-go/corral/tasks"
)

// askedAndHeld waits until queue q's consumer holds a worker's pull
// request while pending tasks wait in it, none delivered: what a paused
// consumer does, where a running one would have delivered them at once.
func askedAndHeld(t *testing.T, nc *nats.Conn, consumer string, pending uint64) {
	t.Helper()
	js, _ := jetstream.New(nc)
	var info *jetstream.ConsumerInfo
	natstest.Eventually(t, 30*time.Second, func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		c, err := js.Consumer(ctx, "TASKS_q", consumer)
		if err != nil {
			return false
		}
		info = c.CachedInfo()
		return info.NumWaiting >= 1 && info.NumPending == pending && info.NumAckPending == 0
	}, func() string {
		return fmt.Sprintf("consumer %s: %+v, want a request held and %d pending", consumer, info, pending)
	})
}

// A paused queue delivers nothing, to workers running or started while it
// is paused (a worker's declaration keeps the pause, and one before any
// worker declares the queue paused); resumed, its tasks run.
func TestPausedQueueDeliversNothing(t *testing.T) {
	t.Parallel()
	srv, nc, q := queueOn(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if err := q.Pause(ctx, time.Now().Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	if err := q.Pause(ctx, time.Now().Add(-time.Second)); err == nil {
		t.Fatal("a pause until a time past: nil error")
	}
	enqueue(t, nc, tasks.Config{}, "q", 5)
	var ran atomic.Int32
	h := tasks.HandlerFunc(func(context.Context, *tasks.Task) error { ran.Add(1); return nil })
	paused := func(who string) {
		t.Helper()
		c := counts(t, q)
		if c.PausedUntil.IsZero() || c.Waiting["normal"] != 5 {
			t.Fatalf("%s: counts %+v, want the queue paused with its 5 tasks waiting", who, c)
		}
		// The worker asks, and the server holds its request and delivers
		// nothing.
		askedAndHeld(t, nc, "normal", 5)
		if n := ran.Load(); n != 0 {
			t.Fatalf("%s: %d tasks ran while the queue was paused", who, n)
		}
	}
	a := startWorker(t, srv.URL(), "q", tasks.Config{}, h, nil)
	natstest.Eventually(t, 30*time.Second, func() bool { return a.w.Status().Lease == tasks.LeaseStateHeld },
		func() string { return fmt.Sprintf("a: %+v", a.w.Status()) })
	paused("a worker started after the pause")
	if err := a.stop(); !errors.Is(err, context.Canceled) {
		t.Fatalf("a's stop: %v", err)
	}
	b := startWorker(t, srv.URL(), "q", tasks.Config{}, h, nil)
	natstest.Eventually(t, 30*time.Second, func() bool { return b.w.Status().Lease == tasks.LeaseStateHeld },
		func() string { return fmt.Sprintf("b: %+v", b.w.Status()) })
	paused("another worker declaring the queue again")
	if err := q.Resume(ctx); err != nil {
		t.Fatal(err)
	}
	natstest.Eventually(t, 30*time.Second, func() bool { return ran.Load() == 5 }, func() string {
		return fmt.Sprintf("%d of 5 ran after the resume", ran.Load())
	})
	if c := counts(t, q); !c.PausedUntil.IsZero() {
		t.Fatalf("counts after the resume: %+v", c)
	}
	if err := q.Resume(ctx); err != nil {
		t.Fatalf("a second resume: %v", err)
	}
}
