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
	"github.com/corral-go/corral/embedded"
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

// runPolicy floods one client's slow handler under policy and prints
// what it did with the overload.
func runPolicy(ctx context.Context, dir string, policy consumer.Overflow, out io.Writer) error {
	var episodes atomic.Int64
	client, err := newClient(dir, policy, &episodes)
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
	if err := client.Ready(waitCtx); err != nil {
		return err
	}
	nc, err := client.Conn(waitCtx)
	if err != nil {
		return err
	}

	queue := watchQueue(client)
	err = flood(nc, policy)
	if err == nil {
		err = waitAccounted(waitCtx, client)
	}
	deepest := queue.stop()
	if err != nil {
		return err
	}
	c := status(client).Counters
	fmt.Fprintf(out, "summary: policy=%s published=%d processed=%d dropped=%d slow_consumer_events=%d max_queue=%d\n",
		policy, published, c.Processed, c.Dropped+c.Rejected, episodes.Load(), deepest)
	return nil
}

// newClient makes a client on the embedded server with one handler,
// "slow": two workers that take 200µs a message, behind a queue of 100
// with the given overflow policy. Under Reject it is a request handler,
// the kind whose callers a full queue can answer at once. episodes counts
// the slow-consumer episodes the client reports.
func newClient(dir string, policy consumer.Overflow, episodes *atomic.Int64) (*corral.Client, error) {
	var cfg corral.Config
	cfg.Name = "slowconsumer"
	cfg.Server.StoreDir = dir
	client, err := corral.New(cfg, corral.WithEmbeddedServer(embedded.New), corral.WithEventHook(func(e corral.Event) {
		if _, ok := e.(consumer.SlowConsumerStarted); ok {
			episodes.Add(1)
		}
	}))
	if err != nil {
		return nil, err
	}
	hc := consumer.Config{Subject: subject(policy), Workers: workers, QueueSize: queueSize, Overflow: policy}
	if policy == consumer.Reject {
		answer := consumer.RequestFunc(func(ctx context.Context, m *consumer.Msg) (consumer.Reply, error) {
			time.Sleep(work)
			return consumer.Reply{Data: []byte("done")}, nil
		})
		return client, client.HandleRequest("slow", hc, answer)
	}
	handle := consumer.HandlerFunc(func(ctx context.Context, m *consumer.Msg) error {
		time.Sleep(work)
		return nil
	})
	return client, client.Handle("slow", hc, handle)
}

// subject is where the messages for policy go: a subject per policy, so
// that nothing left from one run reaches the next.
func subject(policy consumer.Overflow) string { return "work." + string(policy) }

// flood publishes every message as fast as the connection takes them.
// Under Reject each carries a reply subject, so that a full queue answers
// it; the answers are not read, the rejections are counted.
func flood(nc *nats.Conn, policy consumer.Overflow) error {
	msg := nats.NewMsg(subject(policy))
	msg.Data = []byte("job")
	if policy == consumer.Reject {
		msg.Reply = nats.NewInbox()
	}
	for range published {
		if err := nc.PublishMsg(msg); err != nil {
			return err
		}
	}
	return nc.Flush()
}

// waitAccounted waits until every message published is processed,
// failed, dropped or rejected.
func waitAccounted(ctx context.Context, client *corral.Client) error {
	for {
		c := status(client).Counters
		if c.Processed+c.Failed+c.Dropped+c.Rejected == published {
			return nil
		}
		if err := sleep(ctx, 5*time.Millisecond); err != nil {
			return fmt.Errorf("not every message was accounted for: %+v", c)
		}
	}
}

// queueWatch samples the handler's queue depth every millisecond and
// keeps the deepest it saw.
type queueWatch struct {
	halt    chan struct{}
	done    chan struct{}
	deepest int // written by the sampling goroutine, read once it is done
}

func watchQueue(client *corral.Client) *queueWatch {
	w := &queueWatch{halt: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(w.done)
		for {
			select {
			case <-w.halt:
				return
			case <-time.After(time.Millisecond):
			}
			w.deepest = max(w.deepest, status(client).Counters.QueueDepth)
		}
	}()
	return w
}

// stop ends the sampling and returns the deepest queue seen.
func (w *queueWatch) stop() int {
	close(w.halt)
	<-w.done
	return w.deepest
}

func status(c *corral.Client) consumer.Status { return c.Status().Handlers[0] }

func sleep(ctx context.Context, d time.Duration) error {
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(d):
		return nil
	}
}
