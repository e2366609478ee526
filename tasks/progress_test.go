package tasks_test

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/corral-go/corral/internal/natstest"
	"github.com/corral-go/corral/tasks"
)

// A task that reports progress a thousand times a second costs one write
// a heartbeat, its latest value, which Info reads; a task that reports
// none costs none; and too long a report is refused.
func TestProgressIsCoalesced(t *testing.T) {
	t.Parallel()
	srv, nc, q := queueOn(t)
	var writes atomic.Int64
	if _, err := natstest.Connect(t, srv.URL()).Subscribe("corral.tasks.q.progress.>", func(*nats.Msg) { writes.Add(1) }); err != nil {
		t.Fatal(err)
	}
	const heartbeat = 200 * time.Millisecond
	release := make(chan struct{})
	reported := make(chan time.Duration, 1)
	tooLong := make(chan error, 1)
	startWorker(t, srv.URL(), "q", tasks.Config{Heartbeat: heartbeat}, tasks.HandlerFunc(func(ctx context.Context, task *tasks.Task) error {
		if task.ID() == "silent" {
			<-release
			return nil
		}
		tooLong <- task.Progress(make([]byte, tasks.MaxProgressLen+1))
		start := time.Now()
		for i := 1; i <= 1000; i++ {
			if err := task.Progress([]byte(fmt.Sprintf("%d/1000", i))); err != nil {
				return err
			}
			time.Sleep(time.Millisecond) // the task's work between reports
		}
		reported <- time.Since(start)
		<-release
		return nil
	}), nil)
	for _, id := range []string{"silent", "reports"} {
		if err := enqueueOne(t, nc, id); err != nil {
			t.Fatal(err)
		}
	}
	if err := <-tooLong; err == nil || !strings.Contains(err.Error(), fmt.Sprint(tasks.MaxProgressLen)) {
		t.Errorf("progress past MaxProgressLen: %v, want it refused naming the limit", err)
	}
	took := <-reported
	natstest.Eventually(t, 10*time.Second, func() bool {
		i, err := info(t, q, "reports")
		return err == nil && string(i.Progress) == "1000/1000"
	}, func() string { i, err := info(t, q, "reports"); return fmt.Sprintf("%+v, %v", i, err) })
	close(release)
	// One a heartbeat while it reported, the last one after.
	most := int64(took/heartbeat) + 2
	t.Logf("1000 reports over %v: %d writes", took.Round(time.Millisecond), writes.Load())
	if n := writes.Load(); n > most || n < 1 {
		t.Errorf("1000 reports over %v made %d writes, want between 1 and %d: one a heartbeat", took, n, most)
	}
	if i, err := info(t, q, "silent"); err != nil || i.Progress != nil {
		t.Errorf("the task that reported nothing: %+v, %v; want no progress", i, err)
	}
}
