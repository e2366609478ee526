// Command slowconsumer runs a fast publisher against a deliberately slow
// handler, once per overflow policy, on the embedded server, and prints
// what each policy did with the overload:
//
//	go run ./examples/slowconsumer
package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/corral-go/corral"
	"github.com/corral-go/corral/consumer"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "slowconsumer:", err)
		os.Exit(1)
	}
}

const (
	published = 20_000
	workers   = 2
	queueSize = 100
	work      = 200 * time.Microsecond // per message, per worker
)

func run(ctx context.Context, out io.Writer) error {
	dir, err := os.MkdirTemp("", "corral-slowconsumer")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)

	for _, policy := range []consumer.Overflow{consumer.Block, consumer.DropNewest, consumer.DropOldest, consumer.Reject} {
		if err := runPolicy(ctx, dir, policy, out); err != nil {
			return fmt.Errorf("%s: %w", policy, err)
		}
	}
	return nil
}

func runPolicy(ctx context.Context, dir string, policy consumer.Overflow, out io.Writer) error {
	var cfg corral.Config
	cfg.Name = "slowconsumer"
	cfg.Server.StoreDir = dir
	var episodes atomic.Int64
	client, err := corral.New(cfg, corral.WithEventHook(func(e corral.Event) {
		if _, ok := e.(consumer.SlowConsumerStarted); ok {
			episodes.Add(1)
		}
	}))
	if err != nil {
		return err
	}
	var maxQueue atomic.Int64
	hc := consumer.Config{Subject: "work." + string(policy), Workers: workers, QueueSize: queueSize, Overflow: policy}
	if policy == consumer.Reject {
		err = client.HandleRequest("slow", hc, consumer.RequestFunc(func(ctx context.Context, m *consumer.Msg) (consumer.Reply, error) {
			time.Sleep(work)
			return consumer.Reply{Data: []byte("done")}, nil
		}))
	} else {
		err = client.Handle("slow", hc, consumer.HandlerFunc(func(ctx context.Context, m *consumer.Msg) error {
			time.Sleep(work)
			return nil
		}))
	}
	if err != nil {
		return err
	}

	runCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- client.Run(runCtx) }()
	defer func() {
		cancel()
		<-done
	}()
	waitCtx, waitCancel := context.WithTimeout(ctx, 30*time.Second)
	defer waitCancel()
	nc, err := client.Conn(waitCtx)
	if err != nil {
		return err
	}
	for !running(client) {
		if err := sleep(waitCtx, time.Millisecond); err != nil {
			return err
		}
	}

	// Publish as fast as the connection takes it, watching the queue.
	stopWatch := make(chan struct{})
	watched := make(chan struct{})
	go func() {
		defer close(watched)
		for {
			select {
			case <-stopWatch:
				return
			case <-time.After(time.Millisecond):
			}
			if d := int64(status(client).Counters.QueueDepth); d > maxQueue.Load() {
				maxQueue.Store(d)
			}
		}
	}()
	msg := nats.NewMsg(hc.Subject)
	msg.Data = []byte("job")
	if policy == consumer.Reject {
		msg.Reply = nats.NewInbox() // answers are not read; rejections are counted
	}
	for range published {
		if err := nc.PublishMsg(msg); err != nil {
			return err
		}
	}
	if err := nc.Flush(); err != nil {
		return err
	}
	// Wait until every message is handled or dropped.
	for {
		c := status(client).Counters
		if c.Processed+c.Failed+c.Dropped+c.Rejected == published {
			break
		}
		if err := sleep(waitCtx, 5*time.Millisecond); err != nil {
			return fmt.Errorf("not every message was accounted for: %+v", c)
		}
	}
	close(stopWatch)
	<-watched
	c := status(client).Counters
	fmt.Fprintf(out, "summary: policy=%s published=%d processed=%d dropped=%d slow_consumer_events=%d max_queue=%d\n",
		policy, published, c.Processed, c.Dropped+c.Rejected, episodes.Load(), maxQueue.Load())
	return nil
}

func status(c *corral.Client) consumer.Status { return c.Status().Handlers[0] }

func running(c *corral.Client) bool {
	hs := c.Status().Handlers
	return len(hs) == 1 && hs[0].Ready
}

func sleep(ctx context.Context, d time.Duration) error {
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(d):
		return nil
	}
}
