package tasks

import (
	"context"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/corral-go/corral/internal/pull"
)

var _ pull.Owner = (*run)(nil)

// Accept queues a copy of a task for a worker; it runs on the inbox's
// callback. The queue holds all the run may hold: this never waits.
func (r *run) Accept(nc *nats.Conn, msg *nats.Msg) bool {
	md, err := msg.Metadata()
	if err != nil {
		return false
	}
	d := &delivery{raw: msg, nc: nc, meta: jetstream.MsgMetadata{
		Sequence:     jetstream.SequencePair{Stream: md.Sequence.Stream, Consumer: md.Sequence.Consumer},
		NumDelivered: md.NumDelivered, NumPending: md.NumPending, Timestamp: md.Timestamp}}
	r.ahead.taken(d, time.Now())
	if r.w.dies(stepTaken) {
		r.ahead.returned(d)
		r.puller.Release()
		return true
	}
	if r.pool.Put(context.Background(), d) != nil {
		r.Return(d)
	}
	return true
}

// Refuse offers a copy the worker has no room for back at once.
func (r *run) Refuse(nc *nats.Conn, msg *nats.Msg) {
	_ = (&delivery{raw: msg, nc: nc}).nak(0)
}

// Redeclare declares the queue again after its consumer or stream went
// missing.
func (r *run) Redeclare(ctx context.Context, js jetstream.JetStream) error {
	if err := r.w.declare(ctx, js.Conn()); err != nil {
		r.w.queueError("declare", err)
	}
	return nil
}

// redeclare declares the queue again when a claim found its held stream
// missing; at most once a second, however many claims found it.
func (r *run) redeclare(ctx context.Context) {
	now, last := time.Now().UnixNano(), r.declaredAt.Load()
	if now-last < int64(time.Second) || !r.declaredAt.CompareAndSwap(last, now) {
		return
	}
	_ = r.Redeclare(ctx, r.ledger().js)
}

// Failed reports a failure to pull from the queue.
func (r *run) Failed(err error) { r.w.pullFailed(err) }

// pullFailed reports err, a failure to pull that the worker recovers
// from. Failures until the queue answers again are one episode: one that
// repeats the failure before it, or is as it a sign that JetStream
// cannot answer for now (a node lost, a leader being elected), is
// reported at debug.
func (w *Worker) pullFailed(err error) {
	if r := w.current.Load(); r != nil && !r.entitled() {
		return
	}
	repeated := w.pullFailing.FailErr(err)
	w.events.Emit(QueueError{EventTime: w.events.Stamp(), Queue: w.queue, Op: "pull", Err: err, Repeated: repeated})
}

// pullRecovered ends the episode of failures to pull, if any: the queue
// answers again.
func (w *Worker) pullRecovered() {
	if failures, since := w.pullFailing.End(); failures > 0 {
		w.events.Emit(QueueRecovered{EventTime: w.events.Stamp(), Queue: w.queue, Failures: failures, Took: time.Since(since)})
	}
}

// Full is nothing to report: a worker that runs all it may is busy, not
// slow.
func (r *run) Full(time.Duration) time.Duration { return time.Hour }
