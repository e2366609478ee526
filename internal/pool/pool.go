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

	// queue is made at the first put (see open), and the workers started
	// then: a thousand handlers waiting for their first message hold no
	// queue and no workers.
	size    int
	opening sync.Once
	opened  atomic.Bool // queue is set; read it only once this is true
	queue   chan T
	spawnMu sync.Mutex // orders Start and open: workers start once both have
	spawned bool
	// direct serializes Run, and directSampler is its latency sampling.
	direct        sync.Mutex
	directSampler sampler
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
		size:     cfg.QueueSize,
		base:     base,
		cancel:   cancel,
		hard:     make(chan struct{}),
		failures: failures,
	}
}

// Start runs the workers: at once if something was queued, else at the
// first put (an unbuffered pool, QueueSize 0, starts them at once: its
// puts need a worker waiting). It is called at most once, before Stop;
// the workers' owner is the pool, and Stop waits for them.
func (p *Pool[T]) Start() {
	p.started.Store(true)
	if p.size == 0 {
		p.open()
	}
	p.spawnMu.Lock()
	defer p.spawnMu.Unlock()
	if p.opened.Load() {
		p.spawnLocked()
	}
}

// open makes the queue, once, and starts the workers if Start has been
// called; it returns the queue.
func (p *Pool[T]) open() chan T {
	p.opening.Do(func() {
		p.queue = make(chan T, p.size)
		p.opened.Store(true)
		if p.started.Load() {
			p.spawnMu.Lock()
			p.spawnLocked()
			p.spawnMu.Unlock()
		}
	})
	return p.queue
}

func (p *Pool[T]) spawnLocked() {
	if p.spawned {
		return
	}
	p.spawned = true
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
	case p.open() <- item:
		return true
	default:
		return false
	}
}

// Put queues item, waiting for room until ctx ends or the stop's deadline
// passes; then it returns ctx's error or [ErrStopped] and item is not
// queued. It is called only by a registered input.
func (p *Pool[T]) Put(ctx context.Context, item T) error {
	queue := p.open()
	select {
	case queue <- item:
		return nil
	default:
	}
	select {
	case queue <- item:
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
	case item = <-p.open():
		return item, true
	default:
		return item, false
	}
}

// Len is the number of items queued now, waiting for a worker.
func (p *Pool[T]) Len() int {
	if !p.opened.Load() {
		return 0
	}
	return len(p.queue)
}

// Cap is the most items the queue holds: Config.QueueSize.
func (p *Pool[T]) Cap() int { return p.size }
