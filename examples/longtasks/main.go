// Command longtasks runs a long-running task queue with three workers of
// different capacities in one process, on the embedded server: 2,000
// tasks of one to three seconds each. Halfway through, one worker's
// machine is gone (its network cut for good, then its process stopped,
// with no chance to clean up) and another is cut off for longer than its
// lease (then comes back). It prints a summary and exits 0 only if no
// task was lost and none was completed twice:
//
//	go run ./examples/longtasks
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/signal"
	"sync"
	"syscall"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/corral-go/corral"
	"github.com/corral-go/corral/examples/internal/procs"
	"github.com/corral-go/corral/publisher"
	"github.com/corral-go/corral/tasks"
)

const (
	queue = "render"
	count = 2_000
)

// queueConfig is the queue's: leases of 3s renewed every second, so that
// a dead worker's tasks are taken by others within a few seconds. Every
// task here is long, so each is claimed before it runs (ClaimAfter < 0),
// and its completion recorded, which the report reads.
var queueConfig = tasks.Config{Heartbeat: time.Second, LeaseTTL: 3 * time.Second, ClaimWait: 5 * time.Second,
	ClaimAfter: -1, KeepCompleted: 10 * time.Minute, SweepEvery: 2 * time.Second}

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "longtasks:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, out io.Writer) error {
	dir, err := os.MkdirTemp("", "corral-longtasks")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	url, stopServer, err := procs.StartServer(ctx, dir)
	if err != nil {
		return err
	}
	defer stopServer()

	var held heldTime
	workers, err := startWorkers(ctx, url, &held, map[string]int{"steady": 600, "doomed": 300, "cut-off": 100})
	if err != nil {
		return err
	}
	defer func() {
		for _, w := range workers {
			w.Stop()
		}
	}()
	// Every worker serves before the tasks come, so that each gets its
	// share of the first wave and runs a full load before the faults.
	for _, w := range workers {
		rctx, cancel := context.WithTimeout(ctx, time.Minute)
		err := w.Client.Ready(rctx)
		cancel()
		if err != nil {
			return fmt.Errorf("%s not ready: %w", w.Name, err)
		}
	}
	renewals, stopCounting, err := countRenewals(url)
	if err != nil {
		return err
	}
	defer stopCounting()

	start := time.Now()
	if err := enqueue(ctx, workers["steady"].Client); err != nil {
		return err
	}
	if err := inflict(ctx, out, workers); err != nil {
		return err
	}
	done, err := waitCompleted(ctx, url)
	if err != nil {
		return err
	}
	took := time.Since(start)
	return report(out, workers, done, took, renewals(), held.total())
}

// worker is one worker process.
type worker struct{ *procs.Process }

// status is the worker's task status.
func (w *worker) status() tasks.Status {
	tw, _ := w.Client.Worker(queue)
	return tw.Status()
}

func startWorkers(ctx context.Context, url string, held *heldTime, capacities map[string]int) (map[string]*worker, error) {
	workers := map[string]*worker{}
	for name, capacity := range capacities {
		w, err := startWorker(ctx, url, name, capacity, held)
		if err != nil {
			for _, w := range workers {
				w.Stop()
			}
			return nil, err
		}
		workers[name] = w
	}
	return workers, nil
}

func startWorker(ctx context.Context, url, name string, capacity int, held *heldTime) (*worker, error) {
	cfg := corral.Config{Tasks: map[string]tasks.Config{queue: queueConfig}}
	p, err := procs.Start(ctx, url, name, cfg, func(c *corral.Client) error {
		return c.HandleTasks(queue, tasks.Config{MaxConcurrency: capacity}, tasks.HandlerFunc(
			func(ctx context.Context, t *tasks.Task) error {
				// The work: one to three seconds, cut short if the run is
				// cancelled (the worker stops, or lost its lease).
				d := time.Second + rand.N(2*time.Second)
				start := time.Now()
				defer func() { held.add(time.Since(start)) }()
				select {
				case <-time.After(d):
					return nil
				case <-ctx.Done():
					return ctx.Err()
				}
			}))
	})
	if err != nil {
		return nil, err
	}
	return &worker{p}, nil
}

// enqueue adds the tasks through the Client's buffered publisher and waits
// until the queue's stream has acknowledged every one.
func enqueue(ctx context.Context, c *corral.Client) error {
	futures := make([]*publisher.Future, 0, count)
	for i := range count {
		f, err := c.Enqueue(ctx, queue, fmt.Appendf(nil, "frame %d", i), publisher.WithMsgID(fmt.Sprintf("frame-%d", i)))
		if err != nil {
			return err
		}
		futures = append(futures, f)
	}
	for _, f := range futures {
		if _, err := f.Wait(ctx); err != nil {
			return err
		}
	}
	return nil
}

// inflict waits until every worker has claimed and started a full load of
// tasks, then kills one and cuts another off for longer than its lease.
func inflict(ctx context.Context, out io.Writer, workers map[string]*worker) error {
	for _, w := range workers {
		full := func() bool { st := w.status(); return st.Counters.Started >= uint64(st.Capacity) }
		if err := procs.Until(ctx, 50*time.Millisecond, full); err != nil {
			return fmt.Errorf("%s never ran a full load: %w", w.Name, err)
		}
	}
	doomed, cutOff := workers["doomed"], workers["cut-off"]
	fmt.Fprintf(out, "killing %s with %d tasks running\n", doomed.Name, doomed.status().Held)
	doomed.Link.Cut()
	go doomed.Stop() // what is left of it stops, unable to reach the server

	fmt.Fprintf(out, "cutting %s off for %v with %d tasks running\n", cutOff.Name, 2*queueConfig.LeaseTTL, cutOff.status().Held)
	cutOff.Link.Pause()
	select {
	case <-time.After(2 * queueConfig.LeaseTTL):
	case <-ctx.Done():
		return ctx.Err()
	}
	cutOff.Link.Resume()
	fmt.Fprintf(out, "%s is back: lease %s\n", cutOff.Name, cutOff.status().Lease)
	return nil
}

// waitCompleted waits until the queue's held stream records a completion
// of every task, and returns the completions it read, those report sums
// up. It reads the server's record, not the workers' counters: a worker
// whose link is cut can have its completion stored and never learn it,
// and no other worker runs that task again, so none counts it.
func waitCompleted(ctx context.Context, url string) (map[string]int, error) {
	nc, err := nats.Connect(url)
	if err != nil {
		return nil, err
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		return nil, err
	}
	var done map[string]int
	// A read can fail while records are written and removed: the next
	// read tries again.
	var readErr error
	err = procs.Until(ctx, time.Second, func() bool {
		var read map[string]int
		if read, readErr = completions(ctx, js); readErr == nil {
			done = read
		}
		return readErr == nil && len(done) >= count
	})
	if err != nil {
		return nil, fmt.Errorf("%d of %d tasks completed: %w", len(done), count, errors.Join(err, readErr))
	}
	return done, nil
}

// heldTime sums how long tasks were held running: what per-task
// keep-alive traffic would grow with.
type heldTime struct {
	mu  sync.Mutex
	sum time.Duration
}

func (h *heldTime) add(d time.Duration) {
	h.mu.Lock()
	h.sum += d
	h.mu.Unlock()
}

func (h *heldTime) total() time.Duration {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.sum
}

// countRenewals counts the messages written to the queue's lease bucket:
// every keep-alive the workers sent, whatever they held.
func countRenewals(url string) (func() int, func(), error) {
	nc, err := nats.Connect(url)
	if err != nil {
		return nil, nil, err
	}
	var mu sync.Mutex
	n := 0
	if _, err := nc.Subscribe("$KV.corral_tasks_"+queue+".w.>", func(*nats.Msg) {
		mu.Lock()
		n++
		mu.Unlock()
	}); err != nil {
		nc.Close()
		return nil, nil, err
	}
	return func() int {
		mu.Lock()
		defer mu.Unlock()
		return n
	}, nc.Close, nil
}

var errFailed = errors.New("tasks were lost or completed twice")
