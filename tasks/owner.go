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
	d := &delivery{raw: msg, nc: nc, meta: &jetstream.MsgMetadata{
		Sequence:     jetstream.SequencePair{Stream: md.Sequence.Stream, Consumer: md.Sequence.Consumer},
		NumDelivered: md.NumDelivered, NumPending: md.NumPending, Timestamp: md.Timestamp}}
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
func (r *run) Failed(err error) { r.w.queueError("pull", err) }

// Full is nothing to report: a worker that runs all it may is busy, not
// slow.
func (r *run) Full(time.Duration) time.Duration { return time.Hour }
