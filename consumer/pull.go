package consumer

import (
	"context"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/corral-go/corral/internal/pull"
)

// pull pulls from the consumer on nc, through the run's puller, until ctx
// ends, the connection is gone, or the consumer fails for good. Before it
// returns, the inboxes are drained (within the stop's grace), so that
// what the server sent reaches the pool, which hands back what it will
// not start.
func (r *jsRun) pull(ctx context.Context, nc *nats.Conn, js jetstream.JetStream, gone <-chan struct{}) error {
	j := r.j
	session, err := r.puller.Open(nc)
	if err != nil {
		return err
	}
	j.subscribed(Subscribed{EventTime: j.events.Stamp(), Handler: j.name, Subject: j.cfg.Subject,
		Stream: j.cfg.Stream, Consumer: j.cfg.Consumer})
	err = session.Run(ctx, js, gone)
	if ctx.Err() != nil {
		// A stop begins before the inboxes drain, so that what they still
		// deliver is handed back rather than started.
		r.beginStop()
	}
	j.ready.Store(false)
	session.Drain(r.drainBy())
	return err
}

// Accept takes a message the puller counts as held: queued for a worker
// and kept alive until settled. It runs on the inbox's callback.
func (r *jsRun) Accept(nc *nats.Conn, msg *nats.Msg) bool {
	m := r.received(nc, msg)
	if m == nil {
		return false
	}
	r.held.add(m)
	// The queue holds all the run may hold: this never waits.
	if r.pool.Put(context.Background(), m) != nil {
		r.Return(m)
	}
	return true
}

// Refuse hands back a message beyond what the run has room for (a request
// presumed lost that delivered after all), for redelivery at once.
func (r *jsRun) Refuse(nc *nats.Conn, msg *nats.Msg) {
	m := r.received(nc, msg)
	if m == nil {
		return
	}
	if m.Nak(0) == nil {
		r.j.stats.naked.Add(1)
	}
	r.returned.Add(1)
}

// received counts a message delivered on nc and wraps it; nil for one not
// from JetStream, which has nothing to ack.
func (r *jsRun) received(nc *nats.Conn, msg *nats.Msg) *Msg {
	j := r.j
	m, err := newJSMsg(nc, msg, j.name)
	if err != nil {
		j.stats.dropped.Add(1)
		return nil
	}
	m.js.alive.Store(time.Now().UnixNano())
	j.numPending.Store(m.js.md.NumPending)
	j.stats.received.Add(1)
	if m.js.md.NumDelivered > 1 {
		j.stats.redelivered.Add(1)
	}
	return m
}

// Redeclare declares the consumer again once the server said it is gone,
// or fails when the handler is bound to it.
func (r *jsRun) Redeclare(ctx context.Context, js jetstream.JetStream) error {
	j := r.j
	created, err := r.ensure(ctx, js)
	switch {
	case err != nil && j.cfg.Bind:
		return err
	case err != nil:
		j.consumeError(err)
	case created:
		j.events.Emit(ConsumerRecreated{EventTime: j.events.Stamp(), Handler: j.name,
			Stream: j.cfg.Stream, Consumer: j.cfg.Consumer})
	}
	return nil
}

// Failed reports a pull failure the puller recovers from.
func (r *jsRun) Failed(err error) { r.j.consumeError(err) }

// Full reports a run that has held all it can for longer than SlowAfter
// as a slow consumer, once an episode.
func (r *jsRun) Full(since time.Duration) time.Duration {
	slowAfter := r.slowAfter()
	if since < slowAfter {
		return slowAfter - since
	}
	r.slow.overflow()
	return episodeTick
}

// drainBy is when draining the inboxes must end: the end of a stop's
// grace, once a stop has begun.
func (r *jsRun) drainBy() time.Time {
	if by := r.stopBy.Load(); by != 0 {
		return time.Unix(0, by)
	}
	return time.Time{}
}

// consumeError reports err, a failure to consume that the handler
// recovers from. Failures until the consumer answers again are one
// episode: one that repeats the failure before it, or is as it a sign
// that JetStream cannot answer for now (a node lost, a leader being
// elected), is reported at debug.
func (j *jsHandler) consumeError(err error) {
	repeated := j.consumeFailing.FailErr(err)
	j.events.Emit(ConsumeError{EventTime: j.events.Stamp(), Handler: j.name, Stream: j.cfg.Stream,
		Consumer: j.cfg.Consumer, Err: err, Repeated: repeated})
}

// consumeRecovered ends the episode of failures to consume, if any: the
// consumer answers again.
func (j *jsHandler) consumeRecovered() {
	failures, since := j.consumeFailing.End()
	if failures > 0 {
		j.events.Emit(ConsumeRecovered{EventTime: j.events.Stamp(), Handler: j.name, Stream: j.cfg.Stream,
			Consumer: j.cfg.Consumer, Failures: failures, Took: time.Since(since)})
	}
}

var _ pull.Owner = (*jsRun)(nil)
