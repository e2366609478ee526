package pool

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"time"

	"github.com/corral-go/corral/supervisor"
)

// ErrStopped is returned by [Pool.Put] once the stop's deadline has passed:
// the pool takes nothing more.
var ErrStopped = errors.New("pool: stopped")

// Work is the kind of work a [Pool] runs. For each item a worker takes,
// the pool calls Handle and then Settle with its result; an item taken
// once the pool is stopping goes to Return instead. A panic in Handle or
// Settle is recovered by the pool, counted, and passed to ReportPanic.
type Work[T any] interface {
	// Handle runs item. Its ctx ends when the pool's Timeout runs out, or
	// when the stop's deadline passes.
	Handle(ctx context.Context, item T) error
	// Settle finishes item after Handle returned err, which is a
	// *supervisor.PanicError when Handle panicked. ctx is Handle's, which
	// may have ended. When Settle itself panics, the pool recovers and
	// reports it: whatever must happen to item regardless, Settle defers.
	Settle(ctx context.Context, item T, err error)
	// Return takes back item, which the pool will not run because it is
	// stopping.
	Return(item T)
	// ReportPanic reports a panic recovered while handling or settling
	// item. The pool reports at most one a second; suppressed counts the
	// panics since the previous report that were not reported.
	ReportPanic(item T, err *supervisor.PanicError, suppressed uint64)
}

// FailureReporter is a [Work] that hears of the errors Handle returns,
// other than panics (ReportPanic has those): at most one a second per
// pool, with the number of failures since the previous report that were
// not reported.
type FailureReporter[T any] interface {
	ReportFailure(item T, err error, suppressed uint64)
}

// Config sizes a [Pool].
type Config struct {
	// Workers is the number of items handled at once. 0 means 1.
	Workers int
	// QueueSize bounds the items waiting for a worker. 0: a put finds room
	// only when a worker is waiting for an item.
	QueueSize int
	// Timeout bounds each Handle call: its ctx ends when it runs out.
	// 0: none.
	Timeout time.Duration
	// Stats is where the pool counts, so that the counts can outlive it
	// (a handler's survive its restarts). nil: counts of the pool's own.
	Stats *Stats
}

// Pool is a bounded queue of items of type T drained by a fixed set of
// workers that run one kind of [Work]. It is built by [New] and used for
// one run: Start, puts, Stop.
type Pool[T any] struct {
	work    Work[T]
	workers int
	timeout time.Duration
	stats   *Stats

	queue chan T
	// base is the handlers' ctx, cancelled when the stop's deadline passes
	// (and when Stop returns).
	base       context.Context
	cancel     context.CancelFunc
	aborted    atomic.Bool   // workers return what they take
	hard       chan struct{} // closed at the deadline: a waiting Put gives up
	hardOnce   sync.Once
	started    atomic.Bool
	running    sync.WaitGroup // the workers
	inputs     sync.WaitGroup // inputs that may still put
	panicMu    sync.Mutex
	reportedAt time.Time
	unreported uint64
	// failures is work, when it is a FailureReporter; failedAt is when it
	// last reported one (unix nanoseconds), unreportedFailures the
	// failures since.
	failures           FailureReporter[T]
	failedAt           atomic.Int64
	unreportedFailures atomic.Uint64
}

// New returns a pool of cfg.Workers workers running work, with a queue of
// cfg.QueueSize. It starts nothing: see [Pool.Start].
func New[T any](cfg Config, work Work[T]) *Pool[T] {
	base, cancel := context.WithCancel(context.Background())
	stats := cfg.Stats
	if stats == nil {
		stats = &Stats{}
	}
	failures, _ := work.(FailureReporter[T])
	return &Pool[T]{
		work:     work,
		workers:  max(cfg.Workers, 1),
		timeout:  cfg.Timeout,
		stats:    stats,
		queue:    make(chan T, cfg.QueueSize),
		base:     base,
		cancel:   cancel,
		hard:     make(chan struct{}),
		failures: failures,
	}
}

// Start runs the workers. It is called at most once, before Stop; their
// owner is the pool, and Stop waits for them.
func (p *Pool[T]) Start() {
	p.started.Store(true)
	p.running.Add(p.workers)
	for range p.workers {
		go p.worker()
	}
}

// Stats returns the counts the pool keeps: those of Config.Stats, or its
// own.
func (p *Pool[T]) Stats() *Stats { return p.stats }

// TryPut queues item if the queue has room, without waiting; it reports
// whether it did. It is called only by a registered input.
func (p *Pool[T]) TryPut(item T) bool {
	select {
	case p.queue <- item:
		return true
	default:
		return false
	}
}

// Put queues item, waiting for room until ctx ends or the stop's deadline
// passes; then it returns ctx's error or [ErrStopped] and item is not
// queued. It is called only by a registered input.
func (p *Pool[T]) Put(ctx context.Context, item T) error {
	select {
	case p.queue <- item:
		return nil
	default:
	}
	select {
	case p.queue <- item:
		return nil
	case <-p.hard:
		return ErrStopped
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Evict removes the oldest queued item, without waiting, and returns it;
// ok is false when the queue is empty. A drop-oldest policy evicts, then
// tries to put again.
func (p *Pool[T]) Evict() (item T, ok bool) {
	select {
	case item = <-p.queue:
		return item, true
	default:
		return item, false
	}
}

// Len is the number of items queued now, waiting for a worker.
func (p *Pool[T]) Len() int { return len(p.queue) }

// Cap is the most items the queue holds: Config.QueueSize.
func (p *Pool[T]) Cap() int { return cap(p.queue) }
