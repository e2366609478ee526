// Command leafnode runs a hub and a leaf node in this process, each with
// a JetStream domain of its own ("hub" and "edge"), and a Client on the
// leaf node that keeps its stream, its bucket and its task queue in the
// hub: its configuration says `jetstream: {domain: hub}`. Halfway
// through, the leaf link is cut for longer than the handler's ack wait
// and the worker's lease, and mended. It prints one line and exits 0
// only if every order was handled, every task was recorded completed
// once, and nothing was lost:
//
//	go run ./examples/leafnode
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"sync"
	"syscall"
	"time"

	"github.com/corral-go/corral"
	"github.com/corral-go/corral/consumer"
	"github.com/corral-go/corral/kv"
	"github.com/corral-go/corral/publisher"
	"github.com/corral-go/corral/stream"
	"github.com/corral-go/corral/supervisor"
	"github.com/corral-go/corral/tasks"
)

const (
	orders   = 400
	jobs     = 100
	leaseTTL = time.Second
)

// config is the edge application's: everything in the hub's domain.
func config(servers []string) corral.Config {
	cfg := corral.Config{Name: "edge"}
	cfg.Connection.Servers = servers
	cfg.JetStreamAPI.Domain = "hub"
	cfg.Streams = map[string]stream.Config{"ORDERS": {Subjects: []string{"orders.>"}}}
	cfg.KV = map[string]kv.Config{"settings": {}}
	cfg.Tasks = map[string]tasks.Config{"render": {Heartbeat: leaseTTL / 4, LeaseTTL: leaseTTL, ClaimWait: leaseTTL,
		KeepCompleted: time.Minute}}
	cfg.Publisher.MaxAttempts = -1 // held until the hub takes it
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
		fmt.Fprintln(os.Stderr, "leafnode:", err)
		os.Exit(1)
	}
}

// summary is what the run found.
type summary struct {
	orders, handled, heldDuringCut, tasks, completedOnce, leasesLost, lost int
}

var errFailed = errors.New("an order was not handled, a task was not completed once, or something was lost")

func (s summary) check() error {
	if s.handled != s.orders || s.completedOnce != s.tasks || s.lost != 0 {
		return errFailed
	}
	return nil
}

func (s summary) String() string {
	return fmt.Sprintf("leafnode: orders=%d handled=%d tasks=%d completed_once=%d lost=%d held_during_cut=%d leases_lost=%d",
		s.orders, s.handled, s.tasks, s.completedOnce, s.lost, s.heldDuringCut, s.leasesLost)
}

// seen is what the edge application's handler and worker saw.
type seen struct {
	mu         sync.Mutex
	orders     map[string]bool
	done       chan struct{} // closed once every order is handled
	leasesLost int
}

func (s *seen) order(_ context.Context, m *consumer.Msg) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.orders[string(m.Data())] = true
	if len(s.orders) == orders {
		close(s.done)
	}
	return nil
}

func (s *seen) event(e supervisor.Event) {
	if _, ok := e.(tasks.LeaseLost); ok {
		s.mu.Lock()
		s.leasesLost++
		s.mu.Unlock()
	}
}

func run(ctx context.Context, out io.Writer) (summary, error) {
	top, err := startLeafNode(ctx)
	if err != nil {
		return summary{}, err
	}
	defer top.stop()
	w := &seen{orders: map[string]bool{}, done: make(chan struct{})}
	c, err := corral.New(config([]string{top.leafURL}), corral.WithEventHook(w.event))
	if err != nil {
		return summary{}, err
	}
	if err := c.Handle("fulfil", consumer.Config{JetStream: consumer.JetStream{Stream: "ORDERS", AckWait: time.Second}},
		consumer.HandlerFunc(w.order)); err != nil {
		return summary{}, err
	}
	if err := c.HandleTasks("render", tasks.Config{}, tasks.HandlerFunc(func(ctx context.Context, _ *tasks.Task) error {
		select { // a little work, long enough for the cut to find some running
		case <-time.After(50 * time.Millisecond):
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	})); err != nil {
		return summary{}, err
	}
	rctx, cancel := context.WithCancel(ctx)
	ran := make(chan error, 1)
	go func() { ran <- c.Run(rctx) }()
	defer func() { cancel(); <-ran }()
	wctx, wcancel := context.WithTimeout(ctx, 2*time.Minute)
	defer wcancel()
	if err := c.Ready(wctx); err != nil {
		return summary{}, err
	}
	s, err := work(wctx, c, top, w)
	if err != nil {
		return s, err
	}
	fmt.Fprintln(out, s)
	return s, nil
}

// work publishes the orders and enqueues the tasks, cutting the leaf link
// halfway for past the ack wait and the lease, and counts what came of
// them.
func work(ctx context.Context, c *corral.Client, top *leafNode, w *seen) (summary, error) {
	s := summary{orders: orders, tasks: jobs}
	var futures []*publisher.Future
	var ids []string
	publish := func(from, to int) error {
		for i := from; i < to; i++ {
			f, err := c.Publish(ctx, "orders.new", fmt.Appendf(nil, "order-%d", i))
			if err != nil {
				return err
			}
			futures = append(futures, f)
		}
		return nil
	}
	enqueue := func(from, to int) error {
		for i := from; i < to; i++ {
			id := fmt.Sprintf("task-%d", i)
			if _, err := c.EnqueueTask(ctx, "render", nil, tasks.WithID(id)); err != nil {
				return err
			}
			ids = append(ids, id)
		}
		return nil
	}
	if err := errors.Join(publish(0, orders/2), enqueue(0, jobs/2)); err != nil {
		return s, err
	}
	top.link.Cut()
	if err := publish(orders/2, orders); err != nil { // held by the publisher while the link is down
		return s, err
	}
	if err := enqueue(jobs/2, jobs); err != nil {
		return s, err
	}
	s.heldDuringCut = c.Status().Publisher.Buffered
	if err := sleep(ctx, 3*leaseTTL); err != nil { // past the ack wait and the lease
		return s, err
	}
	top.link.Mend()
	for _, f := range futures {
		if _, err := f.Wait(ctx); err != nil {
			s.lost++
		}
	}
	select {
	case <-w.done:
	case <-ctx.Done():
	}
	q, err := c.Tasks("render")
	if err != nil {
		return s, err
	}
	for _, id := range ids {
		if err := waitDone(ctx, q, id); err != nil {
			return s, fmt.Errorf("task %s: %w", id, err)
		}
	}
	completed, err := completions(ctx, q)
	if err != nil {
		return s, err
	}
	for _, id := range ids {
		if completed[id] == 1 {
			s.completedOnce++
		}
	}
	w.mu.Lock()
	s.handled, s.leasesLost = len(w.orders), w.leasesLost
	w.mu.Unlock()
	return s, nil
}

// waitDone waits until the task id has ended.
func waitDone(ctx context.Context, q *tasks.Queue, id string) error {
	for {
		info, err := q.Wait(ctx, id)
		if err == nil {
			if info.State != tasks.StateCompleted {
				return fmt.Errorf("ended %s", info.State)
			}
			return nil
		}
		// Asked again while the link comes back, not at once.
		if sleep(ctx, 100*time.Millisecond) != nil {
			return err
		}
	}
}

// completions counts each task's completions as the queue recorded them.
func completions(ctx context.Context, q *tasks.Queue) (map[string]int, error) {
	out := map[string]int{}
	for after := uint64(0); ; {
		page, err := q.List(ctx, tasks.ListOptions{State: tasks.StateCompleted, After: after, Limit: tasks.MaxPageSize})
		if err != nil {
			return nil, err
		}
		for _, info := range page.Tasks {
			out[info.ID]++
		}
		if after = page.Next; after == 0 {
			return out, nil
		}
	}
}

func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}
