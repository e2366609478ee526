package tasks

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/corral-go/corral/internal/streamwatch"
)

// markedFor is how long a worker remembers a cancel marker it saw: a
// claim stored before the marker may start its run just after the watch
// delivered it.
const markedFor = time.Minute

// cancels are the runs of a worker that Queue.Cancel may cut short, and
// the cancel markers its watch saw lately, by task id.
type cancels struct {
	mu      sync.Mutex
	runs    map[string]runCancel
	marked  map[string]marker
	pruneAt time.Time // when marked is next pruned
}

type runCancel struct {
	seq    uint64 // the run's record: a marker stored after it cancels it
	cancel context.CancelCauseFunc
}

type marker struct {
	seq  uint64
	seen time.Time
}

// start returns the ctx of the run of task id under its record at seq:
// cancelled, with the cause ErrCancelled, once a marker stored after the
// record is seen. stop ends it.
func (c *cancels) start(ctx context.Context, id string, seq uint64) (context.Context, func()) {
	rctx, cancel := context.WithCancelCause(ctx)
	c.mu.Lock()
	if c.runs == nil {
		c.runs = map[string]runCancel{}
	}
	c.runs[id] = runCancel{seq: seq, cancel: cancel}
	m := c.marked[id]
	c.mu.Unlock()
	if m.seq > seq {
		cancel(ErrCancelled)
	}
	return rctx, func() {
		c.mu.Lock()
		delete(c.runs, id)
		c.mu.Unlock()
		cancel(nil)
	}
}

// mark takes in the cancel marker of task id, stored at seq when, and
// cuts its run short if it began before it. A marker older than
// markedFor is not remembered: no claim that preceded it is still to
// start its run.
func (c *cancels) mark(id string, seq uint64, stored time.Time) {
	now := time.Now()
	c.mu.Lock()
	if c.marked == nil {
		c.marked = map[string]marker{}
	}
	if now.Sub(stored) < markedFor {
		c.marked[id] = marker{seq: seq, seen: now}
	}
	if now.After(c.pruneAt) { // at most once in markedFor: amortised
		c.pruneAt = now.Add(markedFor)
		for k, m := range c.marked {
			if now.Sub(m.seen) > markedFor {
				delete(c.marked, k)
			}
		}
	}
	run, ok := c.runs[id]
	c.mu.Unlock()
	if ok && seq > run.seq {
		run.cancel(ErrCancelled)
	}
}

// watchCancels watches the queue's cancel markers until ctx ends: one
// consumer per worker, however many tasks it runs. A failed watch is
// reported and started again.
func (r *run) watchCancels(ctx context.Context) {
	w := r.w
	watch := streamwatch.New(streamwatch.Config{Name: w.String() + "/cancels", Stream: w.names.heldStream,
		Filters: []string{fmt.Sprintf(cancelsTmpl, w.queue)},
		Deliver: func(_ context.Context, m jetstream.Msg) error {
			if meta, err := m.Metadata(); err == nil {
				r.cancels.mark(m.Headers().Get(TaskIDHeader), meta.Sequence.Stream, meta.Timestamp)
			}
			return nil
		}}, w.src)
	for ctx.Err() == nil {
		if err := watch.Serve(ctx); ctx.Err() == nil {
			w.queueError("watch cancels", err)
			sleep(ctx, retryWait)
		}
	}
}

// cancelMsg is the marker that cancels task id, of the enqueue nonce
// names, when the queue's last sequence is last: the copies of that
// enqueue and those stored by then are dropped; another enqueue stored
// later runs. It is kept for keep.
func (n names) cancelMsg(id, nonce string, last uint64, keep time.Duration) *nats.Msg {
	m := nats.NewMsg(n.cancel(id))
	m.Header.Set(TaskIDHeader, id)
	m.Header.Set(stateHeader, stateCancelled)
	if nonce != "" {
		m.Header.Set(nonceHeader, nonce)
	}
	m.Header.Set(copyHeader, strconv.FormatUint(last, 10))
	m.Header.Set(jetstream.MsgTTLHeader, keep.String())
	return m
}
