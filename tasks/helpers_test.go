package tasks_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/corral-go/corral/connection"
	"github.com/corral-go/corral/internal/natstest"
	"github.com/corral-go/corral/supervisor"
	"github.com/corral-go/corral/tasks"
)

// ledger records what the workers of a test did with each task.
type ledger struct {
	mu        sync.Mutex
	started   map[string]int
	completed map[string]int
	changed   chan struct{}
}

func newLedger() *ledger {
	return &ledger{started: map[string]int{}, completed: map[string]int{}, changed: make(chan struct{})}
}

func (l *ledger) start(id string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.started[id]++
	close(l.changed)
	l.changed = make(chan struct{})
}

func (l *ledger) complete(id string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.completed[id]++
	close(l.changed)
	l.changed = make(chan struct{})
}

// counts returns how many tasks were completed, and how many more than
// once.
func (l *ledger) counts() (completed, twice int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, n := range l.completed {
		completed++
		if n > 1 {
			twice++
		}
	}
	return completed, twice
}

// waitCompleted waits until n distinct tasks are completed.
func (l *ledger) waitCompleted(t *testing.T, n int, timeout time.Duration) {
	t.Helper()
	natstest.Eventually(t, timeout, func() bool { c, _ := l.counts(); return c >= n }, func() string {
		c, twice := l.counts()
		return fmt.Sprintf("%d of %d tasks completed (%d more than once)", c, n, twice)
	})
}

// declareQueue declares the stream of queue as cfg has it, as a
// publisher that runs before any worker does, and returns a JetStream on
// nc.
func declareQueue(t *testing.T, nc *nats.Conn, cfg tasks.Config, queue string) jetstream.JetStream {
	t.Helper()
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	// A fresh cluster answers no declaration until it has a leader for
	// the stream: asked again until one does.
	name, sc := cfg.QueueStream(queue)
	natstest.Eventually(t, 30*time.Second, func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_, err = sc.Declare(ctx, js, name)
		return err == nil
	}, func() string { return fmt.Sprintf("declare the queue stream %s: %v", name, err) })
	return js
}

// queueOn runs a server with queue q declared, and returns it, a
// connection to it, and q as tasks.Queue sees it on that connection.
func queueOn(t *testing.T) (*natstest.Server, *nats.Conn, *tasks.Queue) {
	t.Helper()
	srv := natstest.RunServer(t)
	nc := natstest.Connect(t, srv.URL())
	declareQueue(t, nc, tasks.Config{}, "q")
	return srv, nc, tasks.NewQueue("q", tasks.Config{}, connection.NewFixed(nc))
}

// enqueue publishes n tasks to queue, with ids task-0..task-<n-1>.
func enqueue(t *testing.T, nc *nats.Conn, cfg tasks.Config, queue string, n int) {
	t.Helper()
	js := declareQueue(t, nc, cfg, queue)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	subject := cfg.Subject
	if subject == "" {
		subject = "corral.tasks." + queue
	}
	futures := make([]jetstream.PubAckFuture, 0, n)
	for i := range n {
		f, err := js.PublishAsync(subject, []byte(fmt.Sprint(i)), jetstream.WithMsgID(fmt.Sprintf("task-%d", i)))
		if err != nil {
			t.Fatal(err)
		}
		futures = append(futures, f)
		// Within nats.go's window of publishes out, which a loaded
		// machine's server fills faster than it acks.
		if (i+1)%1000 == 0 || i == n-1 {
			select {
			case <-js.PublishAsyncComplete():
			case <-ctx.Done():
				t.Fatal("enqueue: not all acknowledged")
			}
		}
	}
	for i, f := range futures {
		select {
		case err := <-f.Err():
			t.Fatalf("enqueue task-%d: %v", i, err)
		default:
		}
	}
}

// publish enqueues one task with data, its id the data itself.
func publish(t *testing.T, nc *nats.Conn, data string) {
	t.Helper()
	publishTask(t, nc, data, []byte(data))
}

// worker is a tasks.Worker served in a tree of its own, on a connection
// of its own.
type worker struct {
	w    *tasks.Worker
	nc   *nats.Conn
	stop func() error
}

func startWorker(t *testing.T, url, queue string, cfg tasks.Config, h tasks.Handler, rec *natstest.Recorder) *worker {
	t.Helper()
	nc := natstest.Connect(t, url, nats.MaxReconnects(-1), nats.ReconnectWait(50*time.Millisecond))
	if rec != nil {
		cfg.Events = supervisor.Events{Hook: rec.Hook}
	}
	// The worker's grace comes from its own policy, so the tree must stop
	// it by that policy too, as corral's HandleTasks does: with the
	// default's longer grace, a stop still claiming outlasted the tree's
	// timeout, and the abandoned worker leaked past the test.
	cfg.Restart = cfg.Restart.Inherit(supervisor.Policy{RestartDelay: 10 * time.Millisecond, Backoff: time.Second,
		ShutdownTimeout: 5 * time.Second})
	w, err := tasks.New(queue, cfg, connection.NewFixed(nc), h)
	if err != nil {
		t.Fatal(err)
	}
	tree := supervisor.NewTree("test", cfg.Events)
	if err := tree.Add(w.String(), w, w.Config().Restart); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- tree.Serve(ctx) }()
	var once sync.Once
	var serveErr error
	stop := func() error {
		once.Do(func() {
			cancel()
			serveErr = <-done
		})
		return serveErr
	}
	t.Cleanup(func() { _ = stop() })
	return &worker{w: w, nc: nc, stop: stop}
}

// assertCompletedOnce checks the queue's held stream: n tasks completed,
// each recorded once, by a worker allowed says may have, and none still
// held.
func assertCompletedOnce(t *testing.T, url string, n int, allowed func(worker string) bool) {
	t.Helper()
	nc := natstest.Connect(t, url)
	js, _ := jetstream.New(nc)
	var done map[string][]string
	var held []string
	var err error
	// Right after a leader change the stream may not answer yet.
	natstest.Eventually(t, 30*time.Second, func() bool {
		done, held, err = readHeld(js)
		return err == nil
	}, func() string { return fmt.Sprintf("read the held stream: %v", err) })
	if len(done) != n || len(held) != 0 {
		t.Fatalf("%d tasks recorded completed, %d still held (%v); want %d completed, none held", len(done), len(held), held, n)
	}
	for task, workers := range done {
		if len(workers) != 1 {
			t.Errorf("task %s completed %d times, by %v", task, len(workers), workers)
		}
		for _, w := range workers {
			if !allowed(w) {
				t.Errorf("task %s's completion by %s was recorded, which must not be", task, w)
			}
		}
	}
}

// readHeld reads queue q's held stream: the workers whose completion of
// each task is recorded, and the tasks still held. It gets each record by
// sequence from the stream leader rather than through a consumer: on a
// cluster, a pull from a consumer just created can reach a server that has
// not yet learnt the consumer's interest, and come back "no responders".
func readHeld(js jetstream.JetStream) (done map[string][]string, held []string, err error) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	s, err := js.Stream(ctx, "TASKS_q_HELD")
	if err != nil {
		return nil, nil, err
	}
	state := s.CachedInfo().State
	done = map[string][]string{}
	var read uint64
	for seq := state.FirstSeq; state.Msgs > 0 && seq <= state.LastSeq; seq++ {
		m, err := s.GetMsg(ctx, seq)
		if errors.Is(err, jetstream.ErrMsgNotFound) {
			continue // replaced by a later record of its subject
		}
		if err != nil {
			return nil, nil, err
		}
		read++
		task, worker := m.Header.Get("Corral-Task-Id"), m.Header.Get("Corral-Task-Worker")
		switch m.Header.Get("Corral-Task-State") {
		case "done":
			done[task] = append(done[task], worker)
		case "held":
			held = append(held, task)
		}
	}
	if read != state.Msgs {
		// A record expired or was written while we read.
		return nil, nil, fmt.Errorf("read %d records of the %d the stream held", read, state.Msgs)
	}
	return done, held, nil
}

// publishTask enqueues a task with data under id as a client that does
// not use corral's Enqueue would: a plain JetStream publish to queue q.
func publishTask(t *testing.T, nc *nats.Conn, id string, data []byte) {
	t.Helper()
	js := declareQueue(t, nc, tasks.Config{}, "q")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := js.Publish(ctx, "corral.tasks.q", data, jetstream.WithMsgID(id)); err != nil {
		t.Fatal(err)
	}
}
