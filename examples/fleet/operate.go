package main

import (
	"context"
	"fmt"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/corral-go/corral"
	"github.com/corral-go/corral/examples/internal/procs"
	"github.com/corral-go/corral/fleet"
	"github.com/corral-go/corral/tasks"
)

// How many of each task, and of orders, the run enqueues.
const (
	failing = 5
	slow    = instances * slots // every slot of the fleet
	normal  = 20
	orders  = 10
)

// consumerInfo reads the state of consumer of stream.
func consumerInfo(ctx context.Context, js jetstream.JetStream, stream, consumer string) (*jetstream.ConsumerInfo, bool) {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	c, err := js.Consumer(ctx, stream, consumer)
	if err != nil {
		return nil, false
	}
	return c.CachedInfo(), true
}

// operate does, through c's inspector, what an operator does with the
// corral command, and counts what happened.
func operate(ctx context.Context, c *corral.Client, w *work) (summary, error) {
	s := summary{instances: instances}
	in := c.Inspector()
	found, err := in.Ping(ctx, fleet.Query{Name: service, Wait: time.Second})
	if err != nil {
		return s, err
	}
	s.seenByPS = len(found)
	q, err := in.Queue(ctx, queue)
	if err != nil {
		return s, err
	}
	enqueue := func(prefix string, n int) error {
		for i := range n {
			e, err := c.EnqueueTask(ctx, queue, nil, tasks.WithID(fmt.Sprintf("%s-%d", prefix, i)))
			if err == nil {
				err = e.Wait(ctx)
			}
			if err != nil {
				return err
			}
		}
		return nil
	}
	// Tasks that fail for good, then tasks that hold every slot, then
	// tasks that wait behind them.
	var counts tasks.Counts
	if err := enqueue("fail", failing); err != nil {
		return s, err
	}
	if err := procs.Until(ctx, 50*time.Millisecond, func() bool {
		counts, err = q.Counts(ctx)
		return err == nil && counts.DeadLettered == failing
	}); err != nil {
		return s, fmt.Errorf("dead letters: %+v, %w", counts, err)
	}
	if err := enqueue("slow", slow); err != nil {
		return s, err
	}
	if err := enqueue("normal", normal); err != nil {
		return s, err
	}
	if err := procs.Until(ctx, 50*time.Millisecond, func() bool {
		counts, err = q.Counts(ctx)
		return err == nil && counts.Running == slow && counts.WaitingTotal() == normal
	}); err != nil {
		return s, fmt.Errorf("counts: %+v, %w", counts, err)
	}
	s.waiting, s.running, s.dead = int(counts.WaitingTotal()), int(counts.Running), int(counts.DeadLettered)

	// Two waiting tasks cancelled, from the first page.
	page, err := q.List(ctx, tasks.ListOptions{State: tasks.StateWaiting, Limit: 10})
	if err != nil {
		return s, err
	}
	for _, t := range page.Tasks[:2] {
		if _, err := q.Cancel(ctx, t.ID); err != nil {
			return s, err
		}
		s.cancelled++
	}

	// Paused, the queue and the handler deliver nothing, though every
	// slot frees and orders come.
	if err := q.Pause(ctx, time.Now().Add(time.Hour)); err != nil {
		return s, err
	}
	if err := in.PauseHandler(ctx, service, handler, time.Now().Add(time.Hour)); err != nil {
		return s, err
	}
	w.paused.Store(true)
	close(w.release)
	for i := range orders {
		if _, err := c.PublishSync(ctx, "orders.new", []byte(fmt.Sprint(i))); err != nil {
			return s, err
		}
	}
	if err := procs.Until(ctx, 50*time.Millisecond, func() bool { n, _ := w.completed("slow-"); return n == slow }); err != nil {
		return s, err
	}
	// Once the handler has asked and the server holds its request with the
	// orders pending, the queue's slots have long been free: its tasks are
	// still pending too, none taken.
	nc, err := c.Conn(ctx)
	if err != nil {
		return s, err
	}
	js, err := jetstream.New(nc)
	if err != nil {
		return s, err
	}
	if err := procs.Until(ctx, 20*time.Millisecond, func() bool {
		info, ok := consumerInfo(ctx, js, "ORDERS", handler)
		return ok && info.NumWaiting >= 1 && info.NumPending == orders && info.NumAckPending == 0
	}); err != nil {
		return s, fmt.Errorf("the handler's consumer never held a request with the %d orders pending: %w", orders, err)
	}
	if info, ok := consumerInfo(ctx, js, "TASKS_"+queue, "normal"); !ok || !info.Paused ||
		info.NumPending != normal-uint64(s.cancelled) || info.NumAckPending != 0 {
		return s, fmt.Errorf("the queue's consumer while paused: %+v", info)
	}
	w.mu.Lock()
	s.pausedDelivered = w.whilePaused
	w.mu.Unlock()
	w.paused.Store(false)
	if err := q.Resume(ctx); err != nil {
		return s, err
	}
	if err := in.ResumeHandler(ctx, service, handler); err != nil {
		return s, err
	}

	// The dead letters retried, now that their tasks succeed.
	w.healed.Store(true)
	n, err := q.RetryAll(ctx, nil)
	if err != nil {
		return s, err
	}
	s.retried = n

	// Everything ends: every task once, but those cancelled; every order.
	want := map[string]int{"fail-": failing, "slow-": slow, "normal-": normal - s.cancelled}
	_ = procs.Until(ctx, 100*time.Millisecond, func() bool {
		for prefix, n := range want {
			if got, _ := w.completed(prefix); got < n {
				return false
			}
		}
		return w.handled() == orders
	})
	for prefix, n := range want {
		got, twice := w.completed(prefix)
		s.lost += max(n-got, 0) + twice
	}
	s.lost += orders - w.handled()
	return s, nil
}
