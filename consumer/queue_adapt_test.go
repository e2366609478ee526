package consumer_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/corral-go/corral/consumer"
	"github.com/corral-go/corral/internal/natstest"
)

// With the default queue_size a JetStream handler holds what its pace
// needs: a no-op handler on a backlog grows past the starting
// Workers + 64 (it ran out between pulls), a slow one never holds more
// than that, leaving the rest of the stream to other instances.
func TestDefaultQueueAdaptsToTheHandlersPace(t *testing.T) {
	t.Parallel()
	e := newJSEnv(t, jetstream.StreamConfig{Name: "PACE", Subjects: []string{"pace.>"}})
	const backlog = 5000
	e.publishSeq("pace.fast", backlog)
	e.publishSeq("pace.slow", 500)
	var fast atomic.Int64
	if err := e.sup.Handle("fast", consumer.Config{Workers: 4, JetStream: consumer.JetStream{Stream: "PACE", FilterSubjects: []string{"pace.fast"}}},
		consumer.HandlerFunc(func(context.Context, *consumer.Msg) error { fast.Add(1); return nil })); err != nil {
		t.Fatal(err)
	}
	var slow atomic.Int64
	if err := e.sup.Handle("slow", consumer.Config{Workers: 1, JetStream: consumer.JetStream{Stream: "PACE", FilterSubjects: []string{"pace.slow"}}},
		consumer.HandlerFunc(func(ctx context.Context, _ *consumer.Msg) error {
			slow.Add(1)
			select {
			case <-time.After(10 * time.Millisecond):
			case <-ctx.Done():
			}
			return nil
		})); err != nil {
		t.Fatal(err)
	}
	stop := e.serve()
	e.subscribed(2)
	natstest.Eventually(t, 30*time.Second, func() bool { return fast.Load() >= backlog },
		func() string { return fmt.Sprintf("fast handled %d of %d", fast.Load(), backlog) })
	// The slow handler has had more than a second, long enough to shrink
	// had it ever grown.
	natstest.Eventually(t, 30*time.Second, func() bool { return slow.Load() >= 100 },
		func() string { return fmt.Sprintf("slow handled %d", slow.Load()) })
	const start = 4 + 64
	t.Logf("peak held: fast %d, slow %d", e.status("fast").Counters.PeakHeld, e.status("slow").Counters.PeakHeld)
	if peak := e.status("fast").Counters.PeakHeld; peak <= 2*start {
		t.Errorf("fast: peak held %d, want more than twice the starting %d", peak, start)
	}
	if peak := e.status("slow").Counters.PeakHeld; peak > 1+64 {
		t.Errorf("slow: peak held %d, want at most the starting %d", peak, 1+64)
	}
	cleanStop(t, stop)
}
