package ops_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/corral-go/corral"
	"github.com/corral-go/corral/corraltest"
	"github.com/corral-go/corral/internal/natstest"
	"github.com/corral-go/corral/ops"
	"github.com/corral-go/corral/tasks"
)

// A task queue's metrics: the worker's counters and its runs' histogram,
// and, from the queue's recoverer, what waits in the queue and since
// when.
func TestQueueMetrics(t *testing.T) {
	t.Parallel()
	var cfg corral.Config
	cfg.Name = "queues"
	cfg.Tasks = map[string]tasks.Config{"render": {}}
	k := corraltest.New(t, cfg, corral.WithOps(ops.Config{Registry: newRegistry(t)}.New))
	c := k.Client
	release := make(chan struct{})
	if err := c.HandleTasks("render", tasks.Config{MaxConcurrency: 1, Prefetch: -1}, tasks.HandlerFunc(
		func(ctx context.Context, task *tasks.Task) error {
			if task.ID() != "block" {
				return nil
			}
			select {
			case <-release:
				return nil
			case <-ctx.Done():
				return ctx.Err()
			}
		})); err != nil {
		t.Fatal(err)
	}
	ctx := start(t, k)
	defer close(release)
	enqueue := func(id string) {
		t.Helper()
		e, err := c.EnqueueTask(ctx, "render", nil, tasks.WithID(id))
		if err == nil {
			err = e.Wait(ctx)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	const quick = 20
	for i := range quick {
		enqueue(fmt.Sprintf("quick-%d", i))
	}
	enqueue("block")
	for i := range 3 {
		enqueue(fmt.Sprintf("waits-%d", i))
	}
	// The queue's series are read at most every 5s: one read while the
	// blocking task was delivered and not yet claimed shows it taken, until
	// the next.
	var m metricFamilies
	natstest.Eventually(t, 20*time.Second, func() bool {
		m = scrape(t, c.OpsHandler())
		s := m.find("corral_tasks_queue_waiting", "slot", "normal")
		return m.value("corral_tasks_completed_total", "queue", "render") == quick &&
			s != nil && s.GetGauge().GetValue() == 3 && m.value("corral_tasks_queue_oldest_waiting_seconds", "queue", "render") > 0 &&
			m.value("corral_tasks_queue_taken", "queue", "render") == 0
	}, func() string { return m.text })
	for _, want := range []struct {
		name string
		want float64
	}{
		{"corral_tasks_started_total", quick + 1},
		{"corral_tasks_held", 1},
		{"corral_tasks_queue_dead_letters", 0},
		{"corral_tasks_queue_paused", 0},
		{"corral_tasks_duplicates_total", 0},
	} {
		if got := m.value(want.name, "queue", "render"); got != want.want {
			t.Errorf("%s{queue=render}: got %v, want %v", want.name, got, want.want)
		}
	}
	// Sampled as the handlers' calls are: within eight of the runs.
	s := m.find("corral_tasks_run_duration_seconds", "queue", "render")
	if s == nil || s.Histogram == nil || s.GetHistogram().GetSampleCount()+8 < quick {
		t.Fatalf("corral_tasks_run_duration_seconds{queue=render}: %v, want about %d runs", s, quick)
	}
}
