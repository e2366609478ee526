package tasks

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/corral-go/corral/connection"
	"github.com/corral-go/corral/internal/episode"
	"github.com/corral-go/corral/internal/event"
	"github.com/corral-go/corral/internal/jsapi"
	"github.com/corral-go/corral/internal/pool"
	"github.com/corral-go/corral/internal/pull"
	"github.com/corral-go/corral/kv"
	"github.com/corral-go/corral/supervisor"
)

// Worker is this process's worker for one task queue: it takes tasks from
// the queue, as many as MaxConcurrency allows, claims each once, runs it
// on its handler, and keeps every one of them alive with a single lease
// renewed every Heartbeat. It also stands for election as the queue's
// recoverer. It is a suture.Service: each Serve is one lease; served
// again (after ErrLeaseLost, say), it takes tasks under a new one.
type Worker struct {
	queue   string
	cfg     Config
	src     connection.Source
	handler Handler
	events  *event.Emitter
	names   names
	stats   counters
	runs    pool.Stats // every lease's pool's, so that its histogram outlives them

	current atomic.Pointer[run] // the Serve under way, for Status
	// pullFailing is the failures to pull since the queue last answered.
	pullFailing episode.Repeats

	// crash, set by tests, is asked at each step of the protocol whether
	// the process dies there: it then cuts the worker's connection, and
	// the worker writes nothing more.
	crash func(step string) bool
	// unfenced, set by tests, makes the worker write as if its lease
	// held: what a worker paused between its check and its write does.
	unfenced bool
	// ahead, set by tests, says how many tasks to take ahead in place of
	// the pace (still at most Prefetch).
	ahead func() int
}

// Steps of the protocol at which tests make a worker die.
const (
	stepTaken    = "taken"      // the copy is taken, waiting for a slot
	stepClaimed  = "claimed"    // the record is written, the queue's copy not acked
	stepAcked    = "acked"      // the copy is acked, the task not run
	stepRan      = "ran"        // the task ran, its outcome not written
	stepPutBack  = "put back"   // the task is enqueued again, its record not removed
	stepLazyRan  = "ran lazily" // a lazy run ended, its copy not acked
	stepPromoted = "promoted"   // a lazy run's record is written, its copy not acked
)

// dies reports whether the process dies at step (in tests only).
func (w *Worker) dies(step string) bool { return w.crash != nil && w.crash(step) }

// New returns a worker for queue that runs h on its tasks, taking its
// connection from src. It fails with supervisor.ErrInvalidConfig for an invalid
// queue name or cfg, and ErrNilHandler for a nil h. A queue's name and
// its stream's are those [ValidateNames] accepts.
func New(queue string, cfg Config, src connection.Source, h Handler) (*Worker, error) {
	if f, ok := h.(HandlerFunc); h == nil || ok && f == nil {
		return nil, fmt.Errorf("%w: queue %q", ErrNilHandler, queue)
	}
	// The queue's name and its stream's are parts of other names, whose
	// JetStream limit they must leave room for: a longer one would fail
	// only when the worker first declares them.
	if err := ValidateNames(queue, cfg); err != nil {
		return nil, fmt.Errorf("tasks: %w", err)
	}
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("tasks: queue %q: %w", queue, err)
	}
	cfg = cfg.withDefaults(queue)
	if cfg.Process == "" {
		// Here, not in withDefaults: every Enqueue runs that, and this
		// asks the operating system.
		cfg.Process = DefaultProcess("")
	}
	names := newNames(queue, cfg)
	return &Worker{queue: queue, cfg: cfg, src: src, handler: h, events: event.New(cfg.Events), names: names}, nil
}

// String names the worker in the tree.
func (w *Worker) String() string { return "tasks/" + w.queue }

// Config returns the worker's configuration, with its defaults.
func (w *Worker) Config() Config { return w.cfg }

// run is one Serve of a worker: one lease and what it holds under it.
type run struct {
	w          *Worker
	id         string // the lease's worker identity, fresh for every run
	lease      *kv.Lease
	pool       *pool.Pool[*delivery]
	puller     *pull.Puller
	recoverer  *recoverer
	led        atomic.Pointer[ledger] // on the current connection
	connected  chan struct{}          // closed once led is set
	fenced     atomic.Bool
	fenceOnce  sync.Once
	running    reserved     // task IDs a copy of which is being claimed or run
	cancels    cancels      // the runs Queue.Cancel may cut short, and the markers seen
	progress   reports      // the runs that reported progress since the last flush
	promoter   promoter     // the lazy runs to claim once they have run ClaimAfter
	ahead      aheadList    // the copies waiting for a slot
	pace       pace         // the runs ended lately: how many to take ahead
	peakHeld   atomic.Int64 // the most copies held at once
	declaredAt atomic.Int64 // unix nanoseconds: the last declaration a claim asked for
	serving    atomic.Bool
	stopBy     atomic.Int64 // unix nanoseconds: when a stop's grace ends
}

// Serve takes and runs tasks until ctx ends, following replaced
// connections; then it stops taking tasks, lets the running ones finish
// within the shutdown timeout, puts back in the queue those that did not,
// and releases its lease. When the lease cannot be renewed in time, it
// cancels every task it runs, writes nothing more about them (the
// recoverer puts them back once the lease has expired), and returns an
// error wrapping ErrLeaseLost.
func (w *Worker) Serve(ctx context.Context) error {
	nc, _, err := w.src.Conn(ctx)
	if err != nil {
		return w.ended(ctx, err)
	}
	if err := w.declare(ctx, nc); err != nil {
		return w.ended(ctx, err)
	}
	r, err := w.newRun(ctx)
	if err != nil {
		return w.ended(ctx, err)
	}
	w.current.Store(r)
	return w.ended(ctx, r.serve(ctx))
}

// ended is what Serve returns: ctx's error once ctx ended, else err.
func (w *Worker) ended(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return ctx.Err()
	}
	return fmt.Errorf("tasks: queue %s: %w", w.queue, err)
}

// declare declares the queue's streams, its consumers and its lease bucket.
func (w *Worker) declare(ctx context.Context, nc *nats.Conn) error {
	ctx, cancel := context.WithTimeout(ctx, jsapi.Timeout)
	defer cancel()
	js, err := w.cfg.JetStreamAPI.New(nc)
	if err != nil {
		return err
	}
	c := w.cfg
	name, queue := c.QueueStream(w.queue)
	if _, err := queue.Declare(ctx, js, name); err != nil {
		return err
	}
	if err := declareHeld(ctx, js, c, w.names); err != nil {
		return err
	}
	if err := declareConsumers(ctx, js, w.queue, w.cfg, nil); err != nil {
		return err
	}
	if err := w.reconcile(ctx, js); err != nil {
		return err
	}
	if c.CreateDeadLetterStream != nil {
		if _, err := c.CreateDeadLetterStream.Declare(ctx, js, c.DeadLetterStream); err != nil {
			return err
		}
	}
	if err := jsapi.CheckDeadLetter(ctx, js, c.DeadLetter); err != nil {
		return err
	}
	return w.declareLeases(ctx, js)
}

// declareHeld declares the queue's held stream, configured by c.
func declareHeld(ctx context.Context, js jetstream.JetStream, c Config, n names) error {
	held := jetstream.StreamConfig{Name: n.heldStream, Subjects: []string{n.heldAll(), fmt.Sprintf(progressAllTmpl, n.queue)},
		MaxMsgsPerSubject: 1, AllowMsgTTL: true, Storage: jsapi.Storage(c.Storage), Replicas: max(c.Replicas, 1),
		Placement: c.Placement.JetStream()}
	if _, _, err := jsapi.DeclareStream(ctx, js, held); err != nil {
		return fmt.Errorf("declare stream %s: %w", n.heldStream, err)
	}
	return nil
}

// declareLeases declares the queue's lease bucket, or checks that the one
// there has this worker's lease TTL: every worker of a queue has the same,
// and none changes it under the others. Each request is asked until
// answered (jsapi.Ask): a fresh cluster answers no lookup of a bucket
// until its stream has a leader.
func (w *Worker) declareLeases(ctx context.Context, js jetstream.JetStream) error {
	c, name := w.cfg, w.names.leaseBucket
	bind := func(ctx context.Context) (jetstream.KeyValue, error) { return js.KeyValue(ctx, name) }
	create := func(ctx context.Context) (jetstream.KeyValue, error) {
		return js.CreateKeyValue(ctx, jetstream.KeyValueConfig{Bucket: name, History: 1, TTL: c.LeaseTTL,
			LimitMarkerTTL: c.LeaseTTL, Storage: jsapi.Storage(c.Storage), Replicas: max(c.Replicas, 1),
			Placement: c.Placement.JetStream()})
	}
	for range 3 {
		b, err := jsapi.Ask(ctx, bind)
		if errors.Is(err, jetstream.ErrBucketNotFound) {
			_, err = jsapi.Ask(ctx, create)
			if errors.Is(err, jetstream.ErrBucketExists) {
				continue // another worker made it meanwhile: check its TTL
			}
			if err != nil {
				return fmt.Errorf("declare bucket %s: %w", name, err)
			}
			return nil
		}
		if err != nil {
			return fmt.Errorf("bucket %s: %w", name, err)
		}
		st, err := jsapi.Ask(ctx, b.Status)
		if err != nil {
			return fmt.Errorf("bucket %s: %w", name, err)
		}
		if st.TTL() != c.LeaseTTL {
			return fmt.Errorf("%w: lease_ttl %v differs from %v, the queue's (bucket %s): every worker of a queue has the same",
				supervisor.ErrInvalidConfig, c.LeaseTTL, st.TTL(), name)
		}
		if st.LimitMarkerTTL() == 0 {
			return fmt.Errorf("%w: bucket %s has no limit markers: the recoverer would not see leases expire; delete it, and a worker declares it again",
				supervisor.ErrInvalidConfig, name)
		}
		return nil
	}
	return fmt.Errorf("declare bucket %s: created and deleted again meanwhile", name)
}

// counters are a worker's counts since it was made.
type counters struct {
	started, completed, failed, handedBack, duplicates, passedOver, rejected, unconfirmed, recovered, leasesLost, cancelled atomic.Uint64
}

// queueError reports a failure of the run under way to talk to the
// queue, as long as its lease holds. A lease lost since explains the
// failure (a process resumed after a pause past its lease finds its
// requests timed out), and LeaseLost reports that.
func (w *Worker) queueError(op string, err error) {
	if r := w.current.Load(); r != nil && !r.entitled() {
		return
	}
	w.events.Emit(QueueError{EventTime: w.events.Stamp(), Queue: w.queue, Op: op, Err: err})
}
