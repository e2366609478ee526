package tasks

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/corral-go/corral/internal/backoff"
	"github.com/corral-go/corral/internal/streamwatch"
)

// cancels are the runs of a worker that Queue.Cancel may cut short, and
// the cancel markers its watch saw lately, by task id.
type cancels struct {
	// keep is how long a marker seen is remembered: as long as the queue
	// keeps it, so that a copy no claim checks against it (a lazy run's)
	// is dropped as long as a claim would be, and a claim stored before
	// the marker may start its run after the watch delivered it.
	keep time.Duration
	// caughtUp is closed once the watch has delivered the markers the
	// queue held when it started: until then only a claim can tell
	// whether a copy was cancelled.
	caughtUp chan struct{}
	mu       sync.Mutex
	runs     map[string]runCancel
	marked   map[string]marker
	pruneAt  time.Time // when marked is next pruned
}

// runCancel is a run Queue.Cancel may cut short: one under a record at
// seq, which a marker stored after it cancels, or a lazy run (seq 0) of
// the copy at copySeq in the queue, which a marker cancels if the copy
// was stored by the cancel.
type runCancel struct {
	seq, copySeq uint64
	cancel       context.CancelCauseFunc
}

// cancelledBy reports whether the marker m cancels the run.
func (rc runCancel) cancelledBy(m marker) bool {
	if rc.seq == 0 {
		return m.seq != 0 && m.copySeq >= rc.copySeq
	}
	return m.seq > rc.seq
}

// marker is a cancel marker seen: stored at seq in the held stream, at
// the time stored, when the queue's last sequence was copySeq.
type marker struct {
	seq, copySeq uint64
	stored       time.Time
}

// start returns the ctx of the run of task id under its record at seq,
// or, with seq 0, of a lazy run of the copy at copySeq in the queue:
// cancelled, with the cause ErrCancelled, once a marker that cancels it
// is seen (see runCancel), or by cancel. The run ends with stop, and a
// lazy run moves under its record with claimed.
func (c *cancels) start(ctx context.Context, id string, seq, copySeq uint64) (rctx context.Context, cancel context.CancelCauseFunc) {
	rctx, cancel = context.WithCancelCause(ctx)
	rc := runCancel{seq: seq, copySeq: copySeq, cancel: cancel}
	c.mu.Lock()
	if c.runs == nil {
		c.runs = map[string]runCancel{}
	}
	c.runs[id] = rc
	m := c.marked[id]
	c.mu.Unlock()
	if rc.cancelledBy(m) {
		cancel(ErrCancelled)
	}
	return rctx, cancel
}

// current reports whether the watch has delivered the markers the queue
// held when it started.
func (c *cancels) current() bool {
	select {
	case <-c.caughtUp:
		return true
	default:
		return false
	}
}

// claimed moves the lazy run of task id under its record at seq.
func (c *cancels) claimed(id string, seq uint64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if run, ok := c.runs[id]; ok {
		run.seq = seq
		c.runs[id] = run
	}
}

// stop ends the run of task id that start began, with cancel.
func (c *cancels) stop(id string, cancel context.CancelCauseFunc) {
	c.mu.Lock()
	delete(c.runs, id)
	c.mu.Unlock()
	cancel(nil)
}

// cancelled reports whether a marker seen cancels the copy of task id at
// copySeq in the queue, which no run holds yet.
func (c *cancels) cancelled(id string, copySeq uint64) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return runCancel{copySeq: copySeq}.cancelledBy(c.marked[id])
}

// mark takes in the cancel marker m of task id, and cuts
// its run short if m cancels it. A marker older than keep is not
// remembered: the queue has let it go.
func (c *cancels) mark(id string, m marker) {
	now := time.Now()
	c.mu.Lock()
	if c.marked == nil {
		c.marked = map[string]marker{}
	}
	if now.Sub(m.stored) < c.keep {
		c.marked[id] = m
	}
	if now.After(c.pruneAt) { // at most once in keep: amortised
		c.pruneAt = now.Add(c.keep)
		for k, old := range c.marked {
			if now.Sub(old.stored) > c.keep {
				delete(c.marked, k)
			}
		}
	}
	run, ok := c.runs[id]
	c.mu.Unlock()
	if ok && run.cancelledBy(m) {
		run.cancel(ErrCancelled)
	}
}

// watchCancels watches the queue's cancel markers until ctx ends: one
// consumer per worker, however many tasks it runs. A failed watch is
// reported and started again.
func (r *run) watchCancels(ctx context.Context) {
	w := r.w
	watch := streamwatch.New(streamwatch.Config{Name: w.String() + "/cancels", Stream: w.names.heldStream, API: w.cfg.JetStreamAPI,
		Filters: []string{fmt.Sprintf(cancelsTmpl, w.queue)},
		Deliver: func(_ context.Context, m jetstream.Msg) error {
			if meta, err := m.Metadata(); err == nil {
				copySeq, _ := strconv.ParseUint(m.Headers().Get(copyHeader), 10, 64)
				r.cancels.mark(m.Headers().Get(TaskIDHeader), marker{seq: meta.Sequence.Stream, copySeq: copySeq, stored: meta.Timestamp})
			}
			return nil
		},
		InitialDone: func(context.Context) error { // once per watch
			close(r.cancels.caughtUp)
			return nil
		}}, w.src)
	for ctx.Err() == nil {
		if err := watch.Serve(ctx); ctx.Err() == nil {
			w.queueError("watch cancels", err)
			_ = backoff.Wait(ctx, retryWait)
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
