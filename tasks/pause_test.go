package tasks_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/corral-go/corral/internal/natstest"
	"github.com/corral-go/corral/tasks"
)

// A worker process paused (SIGSTOP) with room left has pull requests out,
// and keeps them open on the server: its connection stays up. Its tasks
// run elsewhere within its lease TTL and a small margin all the same:
// none is delivered, once recovered, to the paused worker's requests,
// where it would wait out claim_wait. The claim wait here is far longer
// than the bound, so a task delivered there cannot pass in time.
func TestPausedWorkersTasksRunElsewhereWithinItsLease(t *testing.T) {
	t.Parallel()
	srv := natstest.RunServer(t)
	nc := natstest.Connect(t, srv.URL())
	r := watchRuns(t, nc)
	cfg := childConfig
	cfg.ClaimWait = 30 * time.Second
	const n = 5 // of the paused worker's 20 slots
	// Claimed first, so that the tasks are held by the lease the moment
	// they start: one run before its claim would come back after
	// claim_wait, as documented.
	child := startChildWorker(t, srv.URL(), time.Hour, cfg.ClaimWait, "TASKS_TEST_CHILD_CLAIM_AFTER=-1s")
	enqueue(t, nc, cfg, "q", n)
	natstest.Eventually(t, 30*time.Second, func() bool { return r.startedBy(func(string) bool { return true }) == n },
		func() string { return "the worker process did not start every task" })
	var mu sync.Mutex
	ranAt := map[string]time.Time{}
	survivor := startWorker(t, srv.URL(), "q", cfg, tasks.HandlerFunc(func(ctx context.Context, task *tasks.Task) error {
		mu.Lock()
		defer mu.Unlock()
		ranAt[task.ID()] = time.Now()
		return nil
	}), nil)
	// Both workers have requests out when one pauses.
	natstest.Eventually(t, 30*time.Second, func() bool { return survivor.w.Status().Lease == tasks.LeaseStateHeld },
		func() string { return "the other worker never took a lease" })
	child.Pause()
	paused := time.Now()
	natstest.Eventually(t, 60*time.Second, func() bool { return survivor.w.Status().Counters.Completed == n }, func() string {
		return fmt.Sprintf("the other worker completed %d of %d: %+v", survivor.w.Status().Counters.Completed, n, survivor.w.Status())
	})
	bound := childConfig.LeaseTTL + 3*time.Second
	mu.Lock()
	for task, at := range ranAt {
		if after := at.Sub(paused); after > bound {
			t.Errorf("task %s ran elsewhere %v after its worker paused, want within %v (lease TTL + margin; claim_wait %v)",
				task, after.Round(time.Millisecond), bound, cfg.ClaimWait)
		}
	}
	mu.Unlock()
	if err := survivor.stop(); err != nil && err != context.Canceled {
		t.Fatal(err)
	}
	child.Kill()
}
