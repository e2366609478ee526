package chaos

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/corral-go/corral"
	"github.com/corral-go/corral/connection"
	"github.com/corral-go/corral/kv"
	"github.com/corral-go/corral/publisher"
)

// Topology is where the workload runs: the servers each application
// connects to, and the faults that can be done to them. *Server and
// *Cluster are the topologies.
type Topology interface {
	// URL is the servers' own URLs, comma-separated, for the nemesis and
	// the checker.
	URL() string
	// Faults are the faults the topology can do, with the workload's own.
	Faults(w *Workload, nc *nats.Conn, js jetstream.JetStream) []Fault
	// servers returns the URLs the application named app connects to.
	servers(app string) []string
	replicas() int
	// api is the JetStream the applications keep their streams in.
	api() connection.JetStreamAPI
	// cut cuts app's own paths to the servers, or restores them.
	cut(app string, cut bool)
	// pause blackholes app's own paths, or restores them.
	pause(app string, pause bool)
}

// Workload is the application under test, through Corral's public API
// only: a publisher application writing ledgered orders and tasks, and
// watching the results bucket, and worker applications that process them
// and answer requests.
type Workload struct {
	topo   Topology
	ledger *Ledger

	panics   atomic.Bool  // handlers panic on some first deliveries
	injected atomic.Int64 // panics injected

	inputs       atomic.Int64 // TaskInputsFault's runs
	taskIDs      sync.Map     // a task's ledger id -> the Msg-Id it was enqueued with
	runningTasks atomic.Int64 // task handlers running now, in every worker

	mu      sync.Mutex
	pub     *app
	workers map[string]*app

	cancel context.CancelFunc
	loops  sync.WaitGroup
}

// NewWorkload returns a workload on topo (a *Server or a *Cluster) that
// records into l. Nothing runs before Start.
func NewWorkload(topo Topology, l *Ledger) *Workload { return &Workload{topo: topo, ledger: l} }

// Settle waits, for at most limit, until every acknowledged message is
// processed and the watcher has seen every acknowledged result.
func (w *Workload) Settle(limit time.Duration) error {
	deadline := time.Now().Add(limit)
	for {
		unprocessed, unwatched := w.ledger.Outstanding()
		if unprocessed == 0 && unwatched == 0 {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("after %v, %d acknowledged messages unprocessed and %d results unseen by the watcher", limit, unprocessed, unwatched)
		}
		time.Sleep(50 * time.Millisecond) // polling the ledger, which no event announces
	}
}

// AwaitProgress waits, for at most limit, until a message has been
// acknowledged and one processed since the workload started.
func (w *Workload) AwaitProgress(limit time.Duration) error {
	_, err := awaitRecovery(w.ledger, "start", time.Time{}, limit)
	return err
}

// running returns the applications started and not replaced.
func (w *Workload) running() []*app {
	w.mu.Lock()
	defer w.mu.Unlock()
	var apps []*app
	if w.pub != nil {
		apps = append(apps, w.pub)
	}
	for _, a := range w.workers {
		apps = append(apps, a)
	}
	return apps
}

// disruptions counts, over the applications running now, the
// connections replaced and the reconnects of the current ones: a fault
// that breaks connections raises it.
func (w *Workload) disruptions() uint64 {
	var n uint64
	for _, a := range w.running() {
		st := a.client.Status().Connection
		n += st.Generation + st.Stats.Reconnects
	}
	return n
}

// Injected counts the panics the handlers were made to throw.
func (w *Workload) Injected() int64 { return w.injected.Load() }

// workerNames are the worker applications.
var workerNames = []string{"w1", "w2"}

// Start starts the applications and the publishing, tracking and
// requesting loops. rate is orders per second; every tenth is also a
// task.
func (w *Workload) Start(rate int) error {
	w.workers = map[string]*app{}
	for _, name := range workerNames {
		a, err := w.newWorker(name)
		if err != nil {
			w.Stop()
			return fmt.Errorf("worker %s: %w", name, err)
		}
		w.workers[name] = a
	}
	pub, synced, err := w.newPublisher()
	if err != nil {
		w.Stop()
		return fmt.Errorf("publisher: %w", err)
	}
	w.pub = pub
	// The watch must deliver every result revision, so it reads the
	// bucket before there is any: a revision written and superseded before
	// a watch starts is, by design, not one of the current values it
	// delivers.
	select {
	case <-synced:
	case <-time.After(time.Minute):
		w.Stop()
		return errors.New("the results watch did not sync within a minute")
	}
	ctx, cancel := context.WithCancel(context.Background())
	w.cancel = cancel
	pending := make(chan tracked) // track takes each at once
	w.loops.Add(3)
	go func() { defer w.loops.Done(); defer close(pending); w.publish(ctx, rate, pending) }()
	go func() { defer w.loops.Done(); w.track(pending) }()
	go func() { defer w.loops.Done(); w.request(ctx) }()
	return nil
}

// newPublisher makes the publishing application, with the watch that
// follows the results bucket, and returns the watch's Synced channel.
func (w *Workload) newPublisher() (*app, <-chan struct{}, error) {
	c, err := corral.New(config("pub", w.topo))
	if err != nil {
		return nil, nil, err
	}
	results, err := c.KV(resultsBucket)
	if err != nil {
		return nil, nil, err
	}
	watch, err := results.Watch("results-watch", kv.WatchConfig{}, func(_ context.Context, e kv.Entry[[]byte]) error {
		if e.Op != kv.Synced { // the marker that the watch has caught up
			w.ledger.Watched(e.Key, e.Revision)
		}
		return nil
	})
	if err != nil {
		return nil, nil, err
	}
	if err := c.AddWatch(watch); err != nil {
		return nil, nil, err
	}
	a := &app{name: "pub", client: c}
	a.start()
	return a, watch.Synced(), nil
}

// tracked is a message waiting for its outcome.
type tracked struct {
	id     string
	future *publisher.Future
}

// publish writes orders at rate per second until ctx ends, and a task
// with every tenth.
func (w *Workload) publish(ctx context.Context, rate int, pending chan<- tracked) {
	tick := time.NewTicker(time.Second / time.Duration(rate))
	defer tick.Stop()
	for i := 0; ; i++ {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		id := fmt.Sprintf("o-%07d", i)
		f, err := w.pub.client.Publish(ctx, fmt.Sprintf("%s.%d", ordersSubject, i%16), []byte(id), publisher.WithMsgID(id))
		w.accepted(ctx, id, f, err, pending)
		if i%10 == 0 {
			id := fmt.Sprintf("t-%07d", i/10)
			f, err := w.pub.client.Enqueue(ctx, taskQueue, []byte(id), publisher.WithMsgID(id))
			w.accepted(ctx, id, f, err, pending)
		}
	}
}

// accepted ledgers a message the publisher took, and passes its Future
// on to be tracked. A refusal is a finding unless the run is ending.
func (w *Workload) accepted(ctx context.Context, id string, f *publisher.Future, err error, pending chan<- tracked) {
	if err != nil {
		if ctx.Err() == nil {
			w.ledger.Finding("publish %s refused: %v", id, err)
		}
		return
	}
	w.ledger.Attempt(id)
	pending <- tracked{id, f}
}

// track records each Future's outcome as it completes, with the time it
// was seen (within 5 ms), until pending is closed and every Future done.
func (w *Workload) track(pending <-chan tracked) {
	var waiting []tracked
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	open := true
	for open || len(waiting) > 0 {
		select {
		case m, ok := <-pending:
			if !ok {
				open, pending = false, nil
				continue
			}
			waiting = append(waiting, m)
			continue
		case <-tick.C:
		}
		now := time.Now()
		kept := waiting[:0]
		for _, m := range waiting {
			select {
			case <-m.future.Done():
				ack, err := m.future.Result()
				if err != nil {
					w.ledger.Fail(m.id, err)
				} else {
					w.ledger.Ack(m.id, ack.Sequence, now)
				}
			default:
				kept = append(kept, m)
			}
		}
		clear(waiting[len(kept):])
		waiting = kept
	}
}

// request asks the echo handlers, every 20 ms, and checks each answer.
// Requests fail while the servers are away: core NATS is at most once.
func (w *Workload) request(ctx context.Context) {
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for i := 0; ; i++ {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		want := fmt.Sprintf("ping-%d", i)
		rctx, cancel := context.WithTimeout(ctx, time.Second)
		reply, err := w.pub.client.Request(rctx, echoSubject, []byte(want))
		cancel()
		switch {
		case err == nil:
			w.ledger.Reply(string(reply.Data) == want, fmt.Sprintf("asked %s, answered %q", want, reply.Data))
		case errors.Is(err, context.Canceled) && ctx.Err() != nil:
			return
		}
	}
}

// StopPublishing ends the loops and waits until every accepted message
// has its outcome.
func (w *Workload) StopPublishing() {
	if w.cancel != nil {
		w.cancel()
	}
	w.loops.Wait()
}

// Stop stops every application, the workers first: a task run again late
// still writes its result, which the watch, in the publisher application,
// must see before it stops. It returns what their Runs returned other
// than a clean stop, and a watch that did not catch up.
func (w *Workload) Stop() error {
	w.StopPublishing()
	w.mu.Lock()
	pub, workers := w.pub, slices.Collect(maps.Values(w.workers))
	w.mu.Unlock()
	var errs []error
	stop := func(a *app) {
		if err := a.stop(); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", a.name, err))
		}
	}
	for _, a := range workers {
		stop(a)
	}
	if pub != nil {
		if err := w.Settle(30 * time.Second); err != nil {
			errs = append(errs, err)
		}
		stop(pub)
	}
	return errors.Join(errs...)
}
