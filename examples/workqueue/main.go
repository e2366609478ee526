// Command workqueue processes a JetStream work-queue stream with two
// Client instances in one process, sharing one durable consumer, and stops
// one of them halfway. A few poison messages fail every time and end on a
// dead-letter stream. It prints what happened and exits 0 only if no
// message was lost:
//
//	go run ./examples/workqueue
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strconv"
	"sync"
	"syscall"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/corral-go/corral"
	"github.com/corral-go/corral/consumer"
	"github.com/corral-go/corral/embedded"
	"github.com/corral-go/corral/stream"
)

const (
	published  = 10_000
	poisonEach = 1_000 // every thousandth message fails every time
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "workqueue:", err)
		os.Exit(1)
	}
}

// tally records what the two instances did.
type tally struct {
	mu          sync.Mutex
	processed   map[int]bool
	redelivered int
	duplicates  int
}

func (t *tally) handle(ctx context.Context, m *consumer.Msg) error {
	n, err := strconv.Atoi(string(m.Data()))
	if err != nil {
		return consumer.Terminal(err)
	}
	if n%poisonEach == 0 {
		return fmt.Errorf("job %d is poison", n)
	}
	time.Sleep(time.Millisecond) // the work
	t.mu.Lock()
	defer t.mu.Unlock()
	if md := m.Metadata(); md != nil && md.NumDelivered > 1 {
		t.redelivered++ // handed back by the stopped instance, or not acked in time
	}
	if t.processed[n] {
		t.duplicates++
	}
	t.processed[n] = true
	return nil
}

func (t *tally) count() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.processed)
}

func run(ctx context.Context, out io.Writer) error {
	dir, err := os.MkdirTemp("", "corral-workqueue")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	t := &tally{processed: map[int]bool{}}

	// Instance a runs the embedded server; b connects to it.
	var cfgA corral.Config
	cfgA.Name, cfgA.Server.StoreDir = "worker-a", dir
	a, err := newWorker(cfgA, t)
	if err != nil {
		return err
	}
	stopA := start(ctx, a)
	defer stopA()
	waitCtx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	js, dead, err := declareDead(waitCtx, a)
	if err != nil {
		return err
	}
	if err := a.Ready(waitCtx); err != nil {
		return err
	}

	var cfgB corral.Config
	cfgB.Name = "worker-b"
	cfgB.Connection.Servers = []string{a.Status().Connection.URL}
	b, err := newWorker(cfgB, t)
	if err != nil {
		return err
	}
	stopB := start(ctx, b)
	defer stopB()
	if err := b.Ready(waitCtx); err != nil {
		return err
	}

	if err := publish(waitCtx, js); err != nil {
		return err
	}
	if err := stopHalfway(ctx, t, b, stopB, out); err != nil {
		return err
	}
	lost, err := report(ctx, t, dead, out)
	if err != nil {
		return err
	}
	if lost != 0 {
		return fmt.Errorf("%d jobs lost", lost)
	}
	return stopA()
}

// newWorker makes an instance with the jobs handler. Every instance
// shares the durable consumer "workers" of the JOBS work-queue stream,
// with 8 workers and 32 jobs queued of its own; a job that fails 3 times,
// 10ms apart, goes to dead.jobs.
func newWorker(cfg corral.Config, t *tally) (*corral.Client, error) {
	c, err := corral.New(cfg, corral.WithEmbeddedServer(embedded.New))
	if err != nil {
		return nil, err
	}
	jobs := consumer.Config{
		Workers:   8,
		QueueSize: 32,
		JetStream: consumer.JetStream{
			Stream:       "JOBS",
			Consumer:     "workers",
			MaxDeliver:   3,
			Backoff:      []time.Duration{10 * time.Millisecond},
			AckWait:      30 * time.Second,
			DeadLetter:   "dead.jobs",
			CreateStream: &stream.Config{Subjects: []string{"jobs.>"}, Retention: "workqueue"},
		},
	}
	if err := c.Handle("jobs", jobs, consumer.HandlerFunc(t.handle)); err != nil {
		return nil, err
	}
	return c, nil
}

// declareDead declares the DEAD stream, which keeps what the handler
// dead-letters, on c's connection; the returned JetStream context
// publishes the jobs.
func declareDead(ctx context.Context, c *corral.Client) (jetstream.JetStream, jetstream.Stream, error) {
	nc, err := c.Conn(ctx)
	if err != nil {
		return nil, nil, err
	}
	js, err := jetstream.New(nc)
	if err != nil {
		return nil, nil, err
	}
	dead, err := js.CreateOrUpdateStream(ctx, jetstream.StreamConfig{Name: "DEAD", Subjects: []string{"dead.>"}})
	if err != nil {
		return nil, nil, err
	}
	return js, dead, nil
}

// publish sends every job and waits until the stream has stored them all.
func publish(ctx context.Context, js jetstream.JetStream) error {
	for i := range published {
		// Past nats.go's window of 4,000 unacknowledged messages, wait for
		// room (a loaded machine acks slowly) rather than fail after 200ms.
		if _, err := js.PublishAsync("jobs.new", []byte(strconv.Itoa(i)), jetstream.WithStallWait(30*time.Second)); err != nil {
			return err
		}
	}
	select {
	case <-js.PublishAsyncComplete():
		return nil
	case <-ctx.Done():
		return errors.New("publishing did not complete")
	}
}

// stopHalfway stops instance b once half the jobs are done: what it held
// and had not started goes back at once, to a.
func stopHalfway(ctx context.Context, t *tally, b *corral.Client, stopB func() error, out io.Writer) error {
	if err := poll(ctx, 60*time.Second, func() bool { return t.count() >= published/2 }); err != nil {
		return fmt.Errorf("half not processed: %w", err)
	}
	fmt.Fprintf(out, "stopping instance b after %d of %d jobs\n", t.count(), published)
	if err := stopB(); err != nil {
		return fmt.Errorf("stopping b: %w", err)
	}
	st := b.Status().Handlers[0].Counters
	fmt.Fprintf(out, "instance b: processed %d, handed back %d unstarted\n", st.Processed, st.Naked)
	return nil
}

// report waits until every job is processed or dead-lettered, prints the
// summary, and returns how many jobs were neither: lost.
func report(ctx context.Context, t *tally, dead jetstream.Stream, out io.Writer) (lost int, err error) {
	poison := published / poisonEach
	done := func() bool {
		info, err := dead.Info(ctx)
		return err == nil && t.count() == published-poison && int(info.State.Msgs) == poison
	}
	if err := poll(ctx, 60*time.Second, done); err != nil {
		fmt.Fprintf(out, "not everything arrived: %v\n", err)
	}
	info, err := dead.Info(ctx)
	if err != nil {
		return 0, err
	}
	deadLettered := int(info.State.Msgs)
	processed := t.count()
	lost = published - processed - deadLettered
	t.mu.Lock()
	redelivered, duplicates := t.redelivered, t.duplicates
	t.mu.Unlock()
	fmt.Fprintf(out, "processed twice: %d\n", duplicates)
	fmt.Fprintf(out, "summary: published=%d processed_unique=%d redelivered=%d dead_lettered=%d lost=%d\n",
		published, processed, redelivered, deadLettered, lost)
	return lost, nil
}

// start runs c until the returned function is called; it returns what Run
// returned.
func start(ctx context.Context, c *corral.Client) func() error {
	runCtx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- c.Run(runCtx) }()
	var once sync.Once
	var err error
	return func() error {
		once.Do(func() {
			cancel()
			err = <-done
		})
		return err
	}
}

func poll(ctx context.Context, limit time.Duration, cond func() bool) error {
	ctx, cancel := context.WithTimeout(ctx, limit)
	defer cancel()
	for !cond() {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(5 * time.Millisecond):
		}
	}
	return nil
}
