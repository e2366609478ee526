package tasks_test

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/corral-go/corral/connection"
	"github.com/corral-go/corral/internal/natstest"
	"github.com/corral-go/corral/tasks"
)

// On a three-node cluster, a queue's pause outlives leader changes of its
// stream and of its consumers, and dead letters retried across a leader
// change of their stream each run once, when the queue is resumed. The
// tasks are enqueued as EnqueueTask does, its Wait reading the held
// stream a worker has just made, whose first reads a fresh replicated
// stream leaves unanswered: Wait hung there until its ctx ended, before
// those reads were asked again.
func TestPauseAndRetryAcrossLeaderChanges(t *testing.T) {
	t.Parallel()
	cluster := natstest.RunCluster(t, 3)
	nc := natstest.Connect(t, cluster.URLs())
	js, _ := jetstream.New(nc)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	natstest.Eventually(t, 30*time.Second, func() bool {
		_, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: "DEAD", Subjects: []string{"dead.>"}, Replicas: 3})
		return err == nil
	}, func() string { return "the dead letters' stream was never made" })
	cfg := tasks.Config{Replicas: 3, DeadLetter: "dead.q", MaxFailures: 1, Backoff: []time.Duration{50 * time.Millisecond}}
	declareQueue(t, nc, cfg, "q")
	q := tasks.NewQueue("q", cfg, connection.NewFixed(nc))
	var failing atomic.Bool
	failing.Store(true)
	var mu sync.Mutex
	runs := map[string]int{}
	startWorker(t, cluster.URLs(), "q", cfg, tasks.HandlerFunc(func(_ context.Context, task *tasks.Task) error {
		if failing.Load() {
			return fmt.Errorf("%s: boom", task.ID())
		}
		mu.Lock()
		runs[task.ID()]++
		mu.Unlock()
		return nil
	}), nil)
	const n = 5
	var ids []string
	for i := range n {
		ids = append(ids, fmt.Sprintf("d-%d", i))
	}
	for _, id := range ids {
		if err := enqueueOne(t, nc, id); err != nil {
			t.Fatal(err)
		}
	}
	var c tasks.Counts
	natstest.Eventually(t, 60*time.Second, func() bool {
		c = counts(t, q)
		return c.DeadLettered == n
	}, func() string { return fmt.Sprintf("counts: %+v, want %d dead letters", c, n) })

	// Paused, then every leader of the queue changes: still paused.
	if err := q.Pause(ctx, time.Now().Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	stepDown(t, nc, "$JS.API.STREAM.LEADER.STEPDOWN.TASKS_q")
	for _, slot := range []string{"back", "high", "normal", "low"} {
		stepDown(t, nc, "$JS.API.CONSUMER.LEADER.STEPDOWN.TASKS_q."+slot)
	}
	natstest.Eventually(t, 30*time.Second, func() bool {
		ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		defer cancel()
		got, err := q.Counts(ctx)
		c = got
		return err == nil && !c.PausedUntil.IsZero()
	}, func() string { return fmt.Sprintf("counts after the leader changes: %+v, want still paused", c) })

	// The dead letters retried as their stream's leader changes: asked
	// again while it fails, each is enqueued once.
	failing.Store(false)
	stepDown(t, nc, "$JS.API.STREAM.LEADER.STEPDOWN.DEAD")
	retried := 0
	natstest.Eventually(t, 60*time.Second, func() bool {
		rctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		defer cancel()
		got, err := q.RetryAll(rctx, nil)
		retried += got
		return err == nil && retried == n
	}, func() string { return fmt.Sprintf("%d of %d dead letters retried", retried, n) })
	// The worker asks, and the paused queue delivers nothing.
	askedAndHeld(t, nc, "normal", n)
	mu.Lock()
	ran := len(runs)
	mu.Unlock()
	if ran != 0 {
		t.Fatalf("%d retried tasks ran while the queue was paused", ran)
	}
	if err := q.Resume(ctx); err != nil {
		t.Fatal(err)
	}
	natstest.Eventually(t, 60*time.Second, func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(runs) == n
	}, func() string { return fmt.Sprintf("%d of %d retried tasks ran after the resume", len(runs), n) })
	mu.Lock()
	defer mu.Unlock()
	for id, r := range runs {
		if r != 1 {
			t.Errorf("task %s ran %d times, want once", id, r)
		}
	}
	if c := counts(t, q); c.DeadLettered != 0 {
		t.Errorf("counts at the end: %+v, want no dead letter left", c)
	}
}
