// Command fleet runs three Clients of one service on the embedded server,
// each a worker of one task queue and an instance of one JetStream
// handler, and steers them as an operator would with the corral command,
// through the inspector: it finds the processes, reads the queue's counts
// and a page of its waiting tasks, cancels two of them, pauses the queue
// and the handler and checks that nothing is delivered meanwhile, resumes
// them, and retries the dead letters. It prints one line and exits 0 only
// if every process was seen, nothing was delivered while paused and
// nothing was lost:
//
//	go run ./examples/fleet
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
	"github.com/corral-go/corral/consumer"
	"github.com/corral-go/corral/examples/internal/procs"
	"github.com/corral-go/corral/stream"
	"github.com/corral-go/corral/tasks"
)

// The service's configuration, the same for its three processes.
const (
	service   = "shop"
	queue     = "render"
	handler   = "fulfil"
	instances = 3
	slots     = 2 // each worker's
)

func config() corral.Config {
	var cfg corral.Config
	cfg.Streams = map[string]stream.Config{
		"ORDERS": {Subjects: []string{"orders.>"}},
		"DEAD":   {Subjects: []string{"dead.>"}},
	}
	cfg.Tasks = map[string]tasks.Config{queue: {MaxConcurrency: slots, Prefetch: -1, MaxFailures: 1,
		Backoff: []time.Duration{100 * time.Millisecond}, DeadLetter: "dead.render"}}
	return cfg
}

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	s, err := run(ctx, os.Stdout)
	if err == nil {
		err = s.check()
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "fleet:", err)
		os.Exit(1)
	}
}

// summary is what the run found.
type summary struct {
	instances, seenByPS, waiting, running, dead, retried, cancelled, pausedDelivered, lost int
}

var errFailed = errors.New("a process went unseen, something was delivered while paused, or something was lost")

func (s summary) check() error {
	if s.seenByPS != instances || s.pausedDelivered != 0 || s.lost != 0 {
		return errFailed
	}
	return nil
}

func (s summary) String() string {
	return fmt.Sprintf("fleet: instances=%d seen_by_ps=%d waiting=%d running=%d dead=%d retried=%d cancelled=%d paused_delivered=%d lost=%d",
		s.instances, s.seenByPS, s.waiting, s.running, s.dead, s.retried, s.cancelled, s.pausedDelivered, s.lost)
}

func run(ctx context.Context, out io.Writer) (summary, error) {
	dir, err := os.MkdirTemp("", "corral-fleet")
	if err != nil {
		return summary{}, err
	}
	defer os.RemoveAll(dir)
	url, stopServer, err := procs.StartServer(ctx, dir)
	if err != nil {
		return summary{}, err
	}
	defer stopServer()
	w := newWork()
	var fleet []*procs.Process
	defer func() {
		for _, p := range fleet {
			p.Stop()
		}
	}()
	for range instances {
		p, err := procs.Start(ctx, url, service, config(), w.setup)
		if err != nil {
			return summary{}, err
		}
		fleet = append(fleet, p)
	}
	for _, p := range fleet {
		rctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		err := p.Client.Ready(rctx)
		cancel()
		if err != nil {
			return summary{}, err
		}
	}
	s, err := operate(ctx, fleet[0].Client, w)
	if err != nil {
		return s, err
	}
	fmt.Fprintln(out, s)
	return s, nil
}

// setup declares what each process runs.
func (w *work) setup(c *corral.Client) error {
	if err := c.HandleTasks(queue, tasks.Config{}, tasks.HandlerFunc(w.task)); err != nil {
		return err
	}
	return c.Handle(handler, consumer.Config{JetStream: consumer.JetStream{Stream: "ORDERS", Consumer: handler}},
		consumer.HandlerFunc(w.order))
}
