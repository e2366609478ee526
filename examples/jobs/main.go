// Command jobs runs the task queue as a job system, on the embedded
// server: two workers of different capacities in one process take tasks
// enqueued for later, a periodic task both declare, tasks cancelled while
// they wait or run, tasks that report progress and return results read
// back by id, enqueues of ids the queue has; then, with 1,000 tasks
// waiting, a third worker holding 50 long tasks loses its connection for
// good, and its tasks run again elsewhere before the backlog. It prints
// one line and exits 0 only if nothing ran early, twice or not at all:
//
//	go run ./examples/jobs
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/corral-go/corral"
	"github.com/corral-go/corral/examples/internal/procs"
	"github.com/corral-go/corral/tasks"
)

const queue = "jobs"

// queueConfig is every worker's: a dead worker's tasks go to others 3s
// after its last renewal; the periodic task comes every second.
var queueConfig = tasks.Config{Heartbeat: time.Second, LeaseTTL: 3 * time.Second, ClaimWait: 5 * time.Second,
	KeepCompleted: 10 * time.Minute, SweepEvery: 2 * time.Second,
	Schedules: map[string]tasks.Schedule{"tick": {Every: time.Second}}}

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	s, err := run(ctx, os.Stdout)
	if err == nil {
		err = s.check()
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "jobs:", err)
		os.Exit(1)
	}
}

// run runs the job system through its paces and prints its line; main
// judges the summary it returns.
func run(ctx context.Context, out io.Writer) (summary, error) {
	var s summary
	err := runInto(ctx, out, &s)
	return s, err
}

func runInto(ctx context.Context, out io.Writer, s *summary) error {
	dir, err := os.MkdirTemp("", "corral-jobs")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	url, stopServer, err := procs.StartServer(ctx, dir)
	if err != nil {
		return err
	}
	defer stopServer()

	j := newJournal()
	a, err := startWorker(ctx, url, "a", 64, j.handler("a"))
	if err != nil {
		return err
	}
	defer a.Stop()
	b, err := startWorker(ctx, url, "b", 16, j.handler("b"))
	if err != nil {
		return err
	}
	defer b.Stop()
	q, err := a.Client.Tasks(queue)
	if err != nil {
		return err
	}
	steps := []func(context.Context, *worker, *tasks.Queue, *journal, *summary) error{
		scheduled, cancelled, results, duplicates, periodic,
	}
	for _, step := range steps {
		if err := step(ctx, a, q, j, s); err != nil {
			return err
		}
	}
	if err := recovery(ctx, url, a, b, q, j, s); err != nil {
		return err
	}
	s.lost = j.lost(ctx, q)
	fmt.Fprintln(out, *s)
	return nil
}

// worker is one worker process.
type worker struct{ *procs.Process }

func (w *worker) status() tasks.Status {
	tw, _ := w.Client.Worker(queue)
	return tw.Status()
}

// startWorker starts a worker process of the given capacity, and waits
// until it serves.
func startWorker(ctx context.Context, url, name string, capacity int, h tasks.Handler) (*worker, error) {
	cfg := corral.Config{Tasks: map[string]tasks.Config{queue: queueConfig}}
	p, err := procs.Start(ctx, url, name, cfg, func(c *corral.Client) error {
		return c.HandleTasks(queue, tasks.Config{MaxConcurrency: capacity}, h)
	})
	if err != nil {
		return nil, err
	}
	wctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	if err := p.Client.Ready(wctx); err != nil {
		p.Stop()
		return nil, fmt.Errorf("%s not ready: %w", name, err)
	}
	return &worker{p}, nil
}

// enqueue enqueues a task with id and data, and waits until the queue
// has it (or says it is a duplicate).
func enqueue(ctx context.Context, w *worker, id, data string, opts ...tasks.Option) error {
	f, err := w.Client.EnqueueTask(ctx, queue, []byte(data), append(opts, tasks.WithID(id))...)
	if err != nil {
		return err
	}
	return f.Wait(ctx)
}

var (
	errFailed  = errors.New("a task ran early, twice or not at all, or was not found as it should be")
	errTooSlow = errors.New("a task ran later than its time allows, or came back slower than 5s")
)
