package tasks

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
)

// Handler runs tasks. Run returns nil when the task is complete; an error
// fails this run, and the task goes back to the queue after its Backoff
// delay (up to MaxFailures failures); HandBack hands it back without
// failing. ctx is cancelled when the task's Timeout runs out, when the
// worker stops and its grace period has run out, and at once when the
// worker loses its lease: the task is then another worker's, and what Run
// returns is not written.
type Handler interface {
	Run(ctx context.Context, t *Task) error
}

// HandlerFunc adapts a function to [Handler].
type HandlerFunc func(ctx context.Context, t *Task) error

// Run calls f.
func (f HandlerFunc) Run(ctx context.Context, t *Task) error { return f(ctx, t) }

// Task is one run of a task by the worker that holds it. A Task belongs
// to the Run call it is passed to.
type Task struct {
	rec   record
	queue string
	run   *run // its worker's run, which measures a result when one is set

	reports *reports // its worker's, which Progress joins
	token   atomic.Uint64
	lazy    *lazyRun // a run started before its claim

	mu        sync.Mutex
	res       []byte
	prog      []byte // the latest progress reported
	progDirty bool   // reported since the worker last wrote it
}

// ID is the task's identity, the same in every run: the id (Nats-Msg-Id)
// it was enqueued with. A task published past Enqueue without a Msg-Id,
// or with one Enqueue refuses, has one made from its stream sequence,
// "Corral-Task-seq-<n>", which no id Enqueue takes can equal.
func (t *Task) ID() string { return t.rec.id }

// Data is the task's payload.
func (t *Task) Data() []byte { return t.rec.data }

// Header is the headers the task was enqueued with, without Corral's:
// nil when it had none.
func (t *Task) Header() nats.Header { return t.rec.header }

// Schedule names the periodic schedule (Config.Schedules) that enqueued
// the task; empty for a task enqueued otherwise.
func (t *Task) Schedule() string { return t.rec.schedule }

// Queue names the task's queue.
func (t *Task) Queue() string { return t.queue }

// Attempt counts the times the task went back to the queue before this
// run: handed back, failed, or recovered from a worker that died.
func (t *Task) Attempt() int { return t.rec.attempt }

// Failures counts the earlier runs of the task that failed.
func (t *Task) Failures() int { return t.rec.failures }

// Worker is the identity of the lease this run holds the task under.
func (t *Task) Worker() string { return t.rec.worker }

// Token is the run's fencing token: it grows with every claim of the
// task, by any worker. Pass it to what the task writes to, which should
// refuse a token smaller than the largest it has seen: a run that lost
// its lease, still writing, is then refused downstream too. A run started
// before its claim (Config.ClaimAfter) has none, 0, until it is claimed.
func (t *Task) Token() uint64 { return t.token.Load() }

// claimed gives the run the record at seq.
func (t *Task) claimed(seq uint64) { t.token.Store(seq) }

// held is the record the run holds its task by; its seq is 0 until the
// task is claimed.
func (t *Task) held() record {
	rec := t.rec
	rec.seq = t.token.Load()
	return rec
}

// SetResult keeps a copy of b as the task's result, in place of one set
// before: once the run completes (Run returns nil), the task's tombstone
// keeps it for KeepResults, for Queue.Info and Queue.Wait to read. A
// result past MaxResult, or past what the server's max_payload takes
// beside the tombstone's headers, is refused with a *ResultTooLargeError
// (matching ErrResultTooLarge), and the one set before stays. A run that
// fails or hands the task back leaves no result.
func (t *Task) SetResult(b []byte) error {
	if limit := t.run.maxResult(t.rec); len(b) > limit {
		return &ResultTooLargeError{Size: len(b), Limit: limit}
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	t.res = append(make([]byte, 0, len(b)), b...)
	return nil
}

// result is the run's result; nil when none was set.
func (t *Task) result() []byte {
	if t == nil {
		return nil
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.res
}

// ResultTooLargeError is a result Task.SetResult refused. It matches
// ErrResultTooLarge.
type ResultTooLargeError struct {
	Size, Limit int // in bytes
}

// Error says both sizes.
func (e *ResultTooLargeError) Error() string {
	return fmt.Sprintf("tasks: a result of %d bytes: a task's tombstone keeps at most %d (max_result, and the server's max_payload less its headers)",
		e.Size, e.Limit)
}

// Is reports whether target is ErrResultTooLarge.
func (e *ResultTooLargeError) Is(target error) bool { return target == ErrResultTooLarge }

// HandBack returns an error that hands the task back to the queue, to be
// taken after delay (0: at once) by another worker if one can take it.
// It does not count as a failure. Return it from Run.
func HandBack(delay time.Duration) error { return &HandBackError{Delay: delay} }

// HandBackError is what HandBack returns.
type HandBackError struct {
	Delay time.Duration
}

// Error says that the task was handed back, and when it may run again.
func (e *HandBackError) Error() string { return fmt.Sprintf("task handed back for %v", e.Delay) }

// handBack reports whether err asks for a hand-back, and its delay.
func handBack(err error) (time.Duration, bool) {
	var hb *HandBackError
	if errors.As(err, &hb) {
		return max(hb.Delay, 0), true
	}
	return 0, false
}
