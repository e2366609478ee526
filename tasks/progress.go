package tasks

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// MaxProgressLen is the most bytes of progress a task reports at once
// (Task.Progress).
const MaxProgressLen = 4 << 10

// Progress reports how far the run has come, in b (at most
// MaxProgressLen bytes; a copy is kept): Queue.Info reads the latest
// value a worker wrote. Reports are coalesced: the worker writes a task's
// latest value once a heartbeat at most, and nothing for tasks that do not
// report, so that the queue's traffic per heartbeat does not grow with
// the tasks a worker holds. A write is fenced by the task's record: once
// the task is no longer this run's, it is not stored.
func (t *Task) Progress(b []byte) error {
	if len(b) > MaxProgressLen {
		return fmt.Errorf("tasks: progress of %d bytes: at most %d (MaxProgressLen)", len(b), MaxProgressLen)
	}
	t.mu.Lock()
	t.prog = append(t.prog[:0], b...)
	t.progDirty = true
	t.mu.Unlock()
	if t.reports != nil {
		t.reports.add(t)
	}
	if t.lazy != nil && t.token.Load() == 0 {
		// Progress is kept by the record: a lazy run is claimed now.
		t.run.promoter.now(t.lazy)
	}
	return nil
}

// progressPending reports whether progress was reported since the
// worker last wrote it.
func (t *Task) progressPending() bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.progDirty
}

// takeProgress returns the progress reported since it was last taken.
func (t *Task) takeProgress() ([]byte, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if !t.progDirty {
		return nil, false
	}
	t.progDirty = false
	return append([]byte(nil), t.prog...), true
}

// reports are the runs of a worker that reported progress since its last
// flush.
type reports struct {
	mu    sync.Mutex
	tasks map[*Task]struct{}
}

func (r *reports) add(t *Task) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.tasks == nil {
		r.tasks = map[*Task]struct{}{}
	}
	r.tasks[t] = struct{}{}
}

// take returns the tasks that reported, and forgets them.
func (r *reports) take() map[*Task]struct{} {
	r.mu.Lock()
	defer r.mu.Unlock()
	taken := r.tasks
	r.tasks = nil
	return taken
}

// flushProgress writes the progress reported, once a heartbeat, until ctx
// ends: one message per task that reported, its latest value.
func (r *run) flushProgress(ctx context.Context) {
	t := time.NewTicker(r.w.cfg.Heartbeat)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		l := r.ledger()
		if l == nil || !r.entitled() {
			continue
		}
		var sent []jetstream.PubAckFuture
		for task := range r.progress.take() {
			if task.token.Load() == 0 {
				r.progress.add(task) // a lazy run being claimed: next time
				continue
			}
			b, ok := task.takeProgress()
			if !ok {
				continue
			}
			// Fenced by the record: a task no longer this run's is not
			// written, and its progress dropped.
			if f, err := l.js.PublishMsgAsync(l.names.progressMsg(task.held(), b, r.w.cfg.KeepCompleted)); err == nil {
				sent = append(sent, f)
			}
		}
		for _, f := range sent {
			select {
			case <-f.Ok():
			case <-f.Err():
			case <-ctx.Done():
				return
			}
		}
	}
}

// flushLast writes the progress task reported since the last flush, if
// any, before its tombstone fences it: the last value a completed task
// reported stays readable.
func (r *run) flushLast(ctx context.Context, task *Task) {
	if task == nil {
		return
	}
	if b, ok := task.takeProgress(); ok {
		l := r.ledger()
		_, _ = publish(ctx, l.js, l.names.progressMsg(task.held(), b, r.w.cfg.KeepCompleted))
	}
}

// progressMsg is rec's task's progress b, stored on the condition that
// rec is still its record, kept for keep.
func (n names) progressMsg(rec record, b []byte, keep time.Duration) *nats.Msg {
	m := nats.NewMsg(n.progress(rec.id))
	m.Data = b
	m.Header.Set(TaskIDHeader, rec.id)
	m.Header.Set(jetstream.ExpectedLastSubjSeqSubjHeader, n.held(rec.id, rec.worker))
	m.Header.Set(jetstream.ExpectedLastSubjSeqHeader, strconv.FormatUint(rec.seq, 10))
	m.Header.Set(jetstream.MsgTTLHeader, keep.String())
	return m
}
