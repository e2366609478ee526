package tasks_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/corral-go/corral/internal/natstest"
	"github.com/corral-go/corral/tasks"
)

// enqueueInSlot publishes tasks with ids prefix-0..prefix-<n-1> to queue
// q's slot s, as the queue lays out a waiting copy: the task's id last in
// its subject. Slot -1 is the queue's Subject, where Enqueue publishes.
func enqueueInSlot(t *testing.T, js jetstream.JetStream, s int, prefix string, n int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	for i := range n {
		id := fmt.Sprintf("%s-%d", prefix, i)
		subject := fmt.Sprintf("corral.tasks.q.t.%d.%s", s, id)
		if s < 0 {
			subject = "corral.tasks.q"
		}
		m := nats.NewMsg(subject)
		m.Data = []byte(prefix)
		m.Header.Set(jetstream.MsgIDHeader, id)
		if _, err := js.PublishMsgAsync(m); err != nil {
			t.Fatal(err)
		}
		if (i+1)%1000 == 0 || i == n-1 { // within nats.go's window of publishes out
			select {
			case <-js.PublishAsyncComplete():
			case <-ctx.Done():
				t.Fatalf("enqueue %s: not all acknowledged", prefix)
			}
		}
	}
}

// A worker takes every task waiting in a higher slot before any in a
// lower one, whatever order they were stored in: here low first, then
// normal (in its slot and on the queue's Subject), then high. The worker's
// runs are held until the test has seen all it holds, then let go
// together: it takes the next group only then, so no group may have a
// task of a higher slot than one before it.
func TestPriorityStrictOrder(t *testing.T) {
	t.Parallel()
	for _, concurrency := range []int{1, 4} {
		t.Run(fmt.Sprint(concurrency), func(t *testing.T) {
			t.Parallel()
			srv := natstest.RunServer(t)
			js := declareQueue(t, natstest.Connect(t, srv.URL()), tasks.Config{}, "q")
			const low, normal, high = 1000, 100, 10
			enqueueInSlot(t, js, 3, "low", low)
			enqueueInSlot(t, js, 2, "normal", normal/2)
			enqueueInSlot(t, js, -1, "subject", normal/2)
			enqueueInSlot(t, js, 1, "high", high)
			// Each run waits for its own release: one of a group let go must
			// not let a run of the next go in its place.
			type run struct {
				id      string
				release chan struct{}
			}
			began := make(chan run, low+normal+high)
			w := startWorker(t, srv.URL(), "q", tasks.Config{MaxConcurrency: concurrency}, tasks.HandlerFunc(func(ctx context.Context, task *tasks.Task) error {
				r := run{id: task.ID(), release: make(chan struct{})}
				began <- r
				select {
				case <-r.release:
				case <-ctx.Done():
				}
				return nil
			}), nil)
			rank := func(id string) int {
				switch {
				case strings.HasPrefix(id, "high-"):
					return 1
				case strings.HasPrefix(id, "normal-"), strings.HasPrefix(id, "subject-"):
					return 2
				}
				return 3
			}
			var taken []string
			highest := 0 // the lowest slot taken so far
			for len(taken) < low+normal+high {
				// All the worker holds: it takes no more until they end.
				var group []run
				for len(group) < min(concurrency, low+normal+high-len(taken)) {
					select {
					case r := <-began:
						group = append(group, r)
					case <-time.After(30 * time.Second):
						t.Fatalf("%d of %d started; then none for 30s: %+v", len(taken)+len(group), low+normal+high, w.w.Status())
					}
				}
				for _, r := range group {
					if rank(r.id) < highest {
						t.Fatalf("%s taken after a task of slot %d: taken so far %v", r.id, highest, taken)
					}
				}
				for _, r := range group {
					highest = max(highest, rank(r.id))
					taken = append(taken, r.id)
					close(r.release)
				}
			}
		})
	}
}

// A dead worker's tasks run again, on the workers left, before the tasks
// that waited before them: with 10,000 tasks waiting, the last of the 16
// tasks of a worker whose connection is cut starts elsewhere while most of
// the backlog still waits. How soon after the cut is logged (about the
// lease TTL and a quarter of a second on a quiet machine): a time is a
// benchmark's to bound, not a test's on a shared machine; examples/jobs
// checks it against the 5 s it promises.
func TestComeBackFirst(t *testing.T) {
	t.Parallel()
	t.Run("R1", func(t *testing.T) {
		t.Parallel()
		comeBackFirst(t, natstest.RunServer(t).URL(), 1)
	})
	t.Run("R3", func(t *testing.T) {
		t.Parallel()
		comeBackFirst(t, natstest.RunCluster(t, 3).URLs(), 3)
	})
}

func comeBackFirst(t *testing.T, url string, replicas int) {
	const backlog, held = 10_000, 16
	cfg := tasks.Config{MaxConcurrency: held, Heartbeat: 300 * time.Millisecond, LeaseTTL: 2 * time.Second,
		ClaimWait: 2 * time.Second, SweepEvery: time.Second, Replicas: replicas}
	nc := natstest.Connect(t, url)
	js := declareQueue(t, nc, cfg, "q")

	var (
		mu        sync.Mutex
		cut       time.Time
		restarted = map[string]time.Time{} // a dead worker's task, when it started again
		shortRan  int
	)
	gate := make(chan struct{})
	// a and b, the workers left: the cut-off worker's tasks are over at
	// once; the backlog's take 50ms each. a is the recoverer, and holds its
	// first tasks until the backlog is in place.
	survivor := tasks.HandlerFunc(func(ctx context.Context, task *tasks.Task) error {
		switch string(task.Data()) {
		case "fill":
			<-gate
		case "long":
			mu.Lock()
			restarted[task.ID()] = time.Now()
			mu.Unlock()
		default:
			mu.Lock()
			shortRan++
			mu.Unlock()
			select {
			case <-time.After(50 * time.Millisecond): // the task's work
			case <-ctx.Done():
			}
		}
		return nil
	})
	a := startWorker(t, url, "q", cfg, survivor, nil)
	natstest.Eventually(t, 30*time.Second, func() bool { return a.w.Status().Recoverer }, func() string {
		return "the first worker was never elected recoverer"
	})
	enqueueInSlot(t, js, 2, "fill", held)
	natstest.Eventually(t, 30*time.Second, func() bool { return a.w.Status().Held == held }, func() string {
		return fmt.Sprintf("the recoverer holds %d of its %d first tasks", a.w.Status().Held, held)
	})
	c := startWorker(t, url, "q", cfg, slowHandlerFor(time.Hour), nil)
	enqueueInSlot(t, js, 2, "long", held)
	natstest.Eventually(t, 30*time.Second, func() bool { return c.w.Status().Held == held }, func() string {
		return fmt.Sprintf("the worker to be cut off holds %d of %d", c.w.Status().Held, held)
	})
	enqueueInSlot(t, js, 2, "short", backlog)
	startWorker(t, url, "q", cfg, survivor, nil)
	close(gate)

	mu.Lock()
	cut = time.Now()
	mu.Unlock()
	c.nc.Close() // no goodbye: its lease expires
	natstest.Eventually(t, 60*time.Second, func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(restarted) == held
	}, func() string {
		mu.Lock()
		defer mu.Unlock()
		return fmt.Sprintf("%d of the cut-off worker's %d tasks started again; %d of the backlog ran", len(restarted), held, shortRan)
	})
	mu.Lock()
	defer mu.Unlock()
	var last time.Time
	for _, at := range restarted {
		if at.After(last) {
			last = at
		}
	}
	t.Logf("the last of the cut-off worker's tasks started again %v after the cut; %d of the %d waiting had run",
		last.Sub(cut).Round(time.Millisecond), shortRan, backlog)
	if shortRan > backlog/2 {
		t.Errorf("%d of the %d tasks waiting ran before the cut-off worker's: they did not come back first", shortRan, backlog)
	}
}
