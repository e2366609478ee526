package consumer

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/corral-go/corral/connection"
	"github.com/corral-go/corral/internal/jsapi"
	"github.com/corral-go/corral/internal/redeclare"
	"github.com/corral-go/corral/supervisor"
)

const (
	// pullExpiry bounds each pull request; a request that brings nothing
	// is renewed, so an idle handler costs one request per expiry.
	pullExpiry = 10 * time.Second
	// pullHeartbeat is the server's heartbeat on a waiting pull request:
	// two missed ones end it and a new one is sent, which is how a lost
	// request (server restart, leader change) is replaced.
	pullHeartbeat = 2 * time.Second
	// retryMin and retryMax bound the wait before pulling again after a
	// pull failed, so a missing consumer or stream is not hammered.
	retryMin = 100 * time.Millisecond
	retryMax = 5 * time.Second
	// redeclareAfter is the wait before declaring a vanished stream or
	// consumer again (see package redeclare).
	redeclareAfter = redeclare.After
)

// Headers added to a dead-lettered message, beside its own.
const (
	DeadLetterStreamHeader     = "Corral-Dead-Letter-Stream"
	DeadLetterConsumerHeader   = "Corral-Dead-Letter-Consumer"
	DeadLetterSubjectHeader    = "Corral-Dead-Letter-Subject"
	DeadLetterSequenceHeader   = "Corral-Dead-Letter-Sequence"
	DeadLetterDeliveriesHeader = "Corral-Dead-Letter-Deliveries"
	DeadLetterErrorHeader      = "Corral-Dead-Letter-Error"
)

// jsHandler runs one JetStream handler: pull requests sized to the pool's
// free room, so that no message waits in a prefetch buffer while its ack
// wait runs, feed the pool, whose results ack, nak, terminate or
// dead-letter each message.
type jsHandler struct {
	handlerBase
	h          Handler
	numPending atomic.Uint64 // the stream's pending count, from the last message
}

// jsRun is the state of one Serve.
type jsRun struct {
	j    *jsHandler
	pool *pool
	// capacity is what the pool holds (workers + queue); held counts
	// messages pulled and not yet settled, from any inbox. Requests keep
	// held + the current inbox's credits within capacity, and a message
	// beyond it is handed back at once.
	capacity int
	held     atomic.Int64
	freed    chan struct{} // a message was settled
	status   chan error    // statuses of pull requests, newest kept
	js       atomic.Pointer[jetstream.JetStream]
	returned atomic.Uint64
	// ackWait and maxDeliver are the consumer's: configured, or read from a
	// bound consumer by ensure while the keeper and the workers read them.
	// deadLetterClient says MaxDeliver is enforced here, so that a failed
	// dead-letter publish can be tried again.
	ackWait          atomic.Int64 // nanoseconds
	maxDeliver       atomic.Int64
	deadLetterClient bool

	heldMu  sync.Mutex
	heldSet map[*Msg]struct{} // for in-progress acks
	// stopBy is when a stop's grace period ends (unix nanoseconds, 0 before
	// a stop).
	stopBy atomic.Int64
}

// errPastMaxDeliver marks a message delivered past MaxDeliver: only its
// dead letter is tried again.
var errPastMaxDeliver = errors.New("delivered past max_deliver; its dead-letter copy failed before")

// errConnClosed marks a message whose connection closed before it started:
// it cannot be acked, and the server redelivers it after its ack wait.
var errConnClosed = errors.New("its connection closed before it started")

func (j *jsHandler) Serve(ctx context.Context) error {
	r := &jsRun{j: j, capacity: j.cfg.Workers + j.cfg.QueueSize, freed: make(chan struct{}, 1),
		status: make(chan error, 1), heldSet: map[*Msg]struct{}{}}
	r.setLimits(j.cfg.AckWait, j.cfg.MaxDeliver)
	r.deadLetterClient = j.cfg.DeadLetter != "" && j.cfg.MaxDeliver > 0 && !j.cfg.Bind
	cfg := j.cfg
	cfg.QueueSize = r.capacity // the queue never blocks: held is capped at capacity
	p := newPool(j.name, cfg, j.events, j.stats, r.invoke)
	p.subject = j.cfg.Stream
	p.returnQueued = true
	p.after, p.skip = r.after, r.skip
	p.load = func() int { return int(r.held.Load()) }
	p.streamPending = &j.numPending
	r.pool = p
	j.current.Store(p)
	// The workers and the keeper start once the consumer is ensured: a
	// bound consumer's ack wait is known from then on.
	started := false
	keeperDone := make(chan struct{})
	keeperStop := make(chan struct{})
	defer func() {
		close(keeperStop)
		if started {
			<-keeperDone
		}
	}()

	fail := func(err error) error {
		r.beginStop()
		r.stop()
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return err
	}
	for {
		nc, gone, err := j.src.Conn(ctx)
		if err != nil {
			return fail(fmt.Errorf("connection: %w", err))
		}
		js, err := jetstream.New(nc)
		if err != nil {
			return fail(fmt.Errorf("jetstream: %w", err))
		}
		r.js.Store(&js)
		if _, err := r.ensure(ctx, js); err != nil {
			return fail(err)
		}
		if !started {
			started = true
			p.start()
			go r.keep(keeperStop, keeperDone)
		}
		unwatch := j.watchAdvisories(nc)
		err = r.pull(ctx, nc, js, gone)
		unwatch()
		if errors.Is(err, jsapi.ErrConnGone) && ctx.Err() == nil {
			continue
		}
		return fail(err)
	}
}

// beginStop starts the grace period: no message starts any more (the
// queued ones are handed back), and draining the inbox is bounded by it.
func (r *jsRun) beginStop() {
	if r.stopBy.Load() == 0 {
		r.stopBy.Store(time.Now().Add(grace(r.j.cfg.Restart.ShutdownTimeout)).UnixNano())
	}
	r.pool.abort.Store(true)
}

// stop hands back what did not start and lets what runs finish.
func (r *jsRun) stop() {
	start, before := time.Now(), r.pool.handled()
	finished, _ := r.pool.stop(time.Unix(0, r.stopBy.Load()), before)
	r.j.events.Emit(Drained{EventTime: r.j.events.Stamp(), Handler: r.j.name, Subject: r.j.cfg.Stream,
		Finished: finished, Returned: r.returned.Swap(0), Took: time.Since(start)})
}

// setLimits records the consumer's ack wait and max deliveries.
func (r *jsRun) setLimits(ackWait time.Duration, maxDeliver int) {
	r.ackWait.Store(int64(ackWait))
	r.maxDeliver.Store(int64(maxDeliver))
}

// slowAfter is how long the pool may stay full before it is reported:
// configured, or half the consumer's ack wait.
func (r *jsRun) slowAfter() time.Duration {
	if d := r.j.cfg.SlowAfter; d > 0 {
		return d
	}
	return time.Duration(r.ackWait.Load()) / 2
}

// ensure declares the stream (if asked) and the consumer, or checks the
// bound consumer and takes its ack wait and max deliveries. created
// reports a consumer that did not exist.
func (r *jsRun) ensure(ctx context.Context, js jetstream.JetStream) (created bool, err error) {
	ctx, cancel := context.WithTimeout(ctx, jsapi.Timeout)
	defer cancel()
	c := r.j.cfg
	if c.CreateStream != nil {
		if _, err := c.CreateStream.Declare(ctx, js, c.Stream); err != nil {
			return false, err
		}
	}
	existing, infoErr := js.Consumer(ctx, c.Stream, c.Consumer)
	if c.Bind {
		if infoErr != nil {
			return false, fmt.Errorf("bind consumer %s of stream %s: %w", c.Consumer, c.Stream, infoErr)
		}
		cc := existing.CachedInfo().Config
		if cc.AckPolicy != jetstream.AckExplicitPolicy || cc.DeliverSubject != "" {
			return false, fmt.Errorf("bind consumer %s of stream %s: %w: a handler needs a pull consumer with explicit acks",
				c.Consumer, c.Stream, ErrInvalidConfig)
		}
		r.setLimits(cc.AckWait, cc.MaxDeliver)
		return false, nil
	}
	cfg := c.consumerConfig()
	if r.deadLetterClient {
		// Enforced here, so that a message whose dead-letter copy failed
		// is delivered again to try once more.
		cfg.MaxDeliver = -1
	}
	if _, err := js.CreateOrUpdateConsumer(ctx, c.Stream, cfg); err != nil {
		var apiErr *jetstream.APIError
		if errors.As(err, &apiErr) && apiErr.ErrorCode == jetstream.JSErrCodeConsumerCreate ||
			errors.As(err, &apiErr) && strings.Contains(strings.ToLower(apiErr.Description), "can not be updated") {
			return false, fmt.Errorf("consumer %s of stream %s exists with settings that cannot be changed in place "+
				"(delete it, or bind to it as it is): %w", c.Consumer, c.Stream, err)
		}
		return false, fmt.Errorf("declare consumer %s of stream %s: %w", c.Consumer, c.Stream, err)
	}
	return errors.Is(infoErr, jetstream.ErrConsumerNotFound), nil
}

func (c Config) consumerConfig() jetstream.ConsumerConfig {
	cc := jetstream.ConsumerConfig{
		Durable:           c.Consumer,
		AckPolicy:         jetstream.AckExplicitPolicy,
		AckWait:           c.AckWait,
		MaxDeliver:        c.MaxDeliver,
		MaxAckPending:     c.MaxAckPending,
		InactiveThreshold: c.InactiveThreshold,
	}
	filters := c.FilterSubjects
	if c.Subject != "" {
		filters = append([]string{c.Subject}, filters...)
	}
	if len(filters) == 1 {
		cc.FilterSubject = filters[0]
	} else {
		cc.FilterSubjects = filters
	}
	switch c.DeliverPolicy {
	case "new":
		cc.DeliverPolicy = jetstream.DeliverNewPolicy
	case "last":
		cc.DeliverPolicy = jetstream.DeliverLastPolicy
	case "last_per_subject":
		cc.DeliverPolicy = jetstream.DeliverLastPerSubjectPolicy
	}
	return cc
}

// pullRequest is the body of a JetStream pull request.
type pullRequest struct {
	Batch     int           `json:"batch"`
	Expires   time.Duration `json:"expires"`
	Heartbeat time.Duration `json:"idle_heartbeat"`
}

// Statuses of pull requests that are not failures.
var (
	errRequestDone = errors.New("pull request done")
	errRequestLost = errors.New("pull requests lost")
)

// inbox is the subscription pull requests are answered on. When requests
// are presumed lost, a new inbox replaces it: the server checks interest
// before it delivers, so requests it still has for the old one deliver
// nothing once the old one is unsubscribed.
//
// Each inbox keeps its own credits (messages its requests asked for and
// the server has not delivered): what still reaches a replaced one, or the
// end of a request it had, owes nothing to the requests of the new one.
type inbox struct {
	subject string
	sub     *nats.Subscription
	ended   <-chan struct{} // closed after the subscription's last callback
	credits atomic.Int64
	heard   atomic.Int64 // unix nanoseconds of the last message, heartbeat or request
	retired atomic.Bool  // replaced: its statuses are about requests no longer counted
}

// pull sends pull requests for the pool's free room until ctx ends, the
// connection is gone, or the consumer fails for good. Before it returns,
// the inboxes are drained (within the stop's grace), so that what the
// server sent reaches the pool, which hands back what it will not start.
func (r *jsRun) pull(ctx context.Context, nc *nats.Conn, js jetstream.JetStream, gone <-chan struct{}) (err error) {
	j := r.j
	in, err := r.openInbox(nc)
	if err != nil {
		if errors.Is(err, nats.ErrConnectionClosed) {
			return jsapi.ErrConnGone
		}
		return err
	}
	retired := []*inbox{}
	j.ready.Store(true)
	defer func() {
		if ctx.Err() != nil {
			r.beginStop()
		}
		j.ready.Store(false)
		r.drainInboxes(nc, append(retired, in))
	}()
	replace := func(cause error) {
		if cause != nil {
			j.consumeError(cause)
		}
		fresh, err := r.openInbox(nc)
		if err != nil {
			return // keep the old one; the next loss replaces it
		}
		in.retired.Store(true)
		_ = in.sub.Drain()
		retired = append(live(retired), in)
		in = fresh
	}

	j.events.Emit(Subscribed{EventTime: j.events.Stamp(), Handler: j.name, Subject: j.cfg.Subject,
		Stream: j.cfg.Stream, Consumer: j.cfg.Consumer})

	st, watch := j.src.Watch()
	reconnects := st.Stats.Reconnects

	subject := "$JS.API.CONSUMER.MSG.NEXT." + j.cfg.Stream + "." + j.cfg.Consumer
	threshold := max(1, r.capacity/2)
	retry := time.Duration(0)
	var notBefore, fullSince time.Time
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	var redeclareAt time.Time
	for {
		now := time.Now()
		if !redeclareAt.IsZero() && !now.Before(redeclareAt) {
			redeclareAt = time.Time{}
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
			retry = nextRetry(retry)
			notBefore = time.Now().Add(retry)
			now = time.Now()
		}
		// Requests are out but nothing, not even a heartbeat, came for two
		// heartbeats: the server lost them (restart, pause, leader change).
		if in.credits.Load() > 0 && now.Sub(time.Unix(0, in.heard.Load())) > 2*pullHeartbeat {
			replace(jetstream.ErrNoHeartbeat)
		}
		credits := in.credits.Load() // before held: see receive
		free := r.capacity - int(r.held.Load()) - int(credits)
		// Like nats.go's Consume, ask again once half the room is free:
		// asking for every freed slot would double the server's work.
		if free >= threshold && !now.Before(notBefore) && nc.IsConnected() {
			req, _ := json.Marshal(pullRequest{Batch: free, Expires: pullExpiry, Heartbeat: pullHeartbeat})
			in.credits.Add(int64(free))
			in.heard.Store(now.UnixNano()) // heartbeats are due from now
			if err := nc.PublishRequest(subject, in.subject, req); err != nil {
				in.dropCredits(int64(free))
				if errors.Is(err, nats.ErrConnectionClosed) {
					return jsapi.ErrConnGone
				}
				j.consumeError(err)
				retry = nextRetry(retry)
				notBefore = now.Add(retry)
			}
		}

		// Full for longer than SlowAfter: a slow consumer, reported once an
		// episode.
		wait := pullHeartbeat / 2
		if int(r.held.Load()) >= r.capacity {
			if fullSince.IsZero() {
				fullSince = now
			}
			if since, slowAfter := now.Sub(fullSince), r.slowAfter(); since >= slowAfter {
				r.pool.overflow()
				wait = min(wait, episodeTick)
			} else {
				wait = min(wait, slowAfter-since)
			}
		} else {
			fullSince = time.Time{}
		}
		if now.Before(notBefore) {
			wait = min(wait, notBefore.Sub(now))
		}
		timer.Reset(wait)

		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-gone:
			return jsapi.ErrConnGone
		case <-r.freed:
		case <-timer.C:
		case <-watch:
			st, watch = j.src.Watch()
			if st.State == connection.StateConnected && st.Stats.Reconnects != reconnects {
				// Requests do not survive a reconnect: ask again now on a
				// fresh inbox rather than after missed heartbeats.
				reconnects = st.Stats.Reconnects
				replace(nil)
			}
		case err := <-r.status:
			switch {
			case errors.Is(err, errRequestDone), errors.Is(err, jetstream.ErrServerShutdown):
				retry = 0
			case errors.Is(err, errRequestLost):
				replace(err)
			case errors.Is(err, jetstream.ErrBadRequest), errors.Is(err, ErrPullStatus):
				return fmt.Errorf("pull from consumer %s of stream %s: %w", j.cfg.Consumer, j.cfg.Stream, err)
			case errors.Is(err, jetstream.ErrConsumerDeleted), errors.Is(err, nats.ErrNoResponders):
				// The consumer, its stream or JetStream is gone or moving:
				// declare it again once a deletion has had time to finish,
				// or fail when bound to it.
				replace(err)
				if redeclareAt.IsZero() {
					redeclareAt = time.Now().Add(redeclareAfter)
				}
				notBefore = redeclareAt
			default:
				j.consumeError(err)
				retry = nextRetry(retry)
				notBefore = time.Now().Add(retry)
			}
		}
	}
}

// openInbox subscribes a fresh inbox, with no credits.
func (r *jsRun) openInbox(nc *nats.Conn) (*inbox, error) {
	in := &inbox{subject: nc.NewInbox()}
	sub, err := nc.Subscribe(in.subject, func(msg *nats.Msg) { r.receive(nc, in, msg) })
	if err != nil {
		return nil, err
	}
	in.ended = r.pool.feed(sub)
	// Requests bound what arrives; the inbox buffers it all.
	_ = sub.SetPendingLimits(-1, -1)
	in.sub = sub
	return in, nil
}

// live drops the inboxes whose subscription has ended, so that a run that
// replaces inboxes for days does not keep them all.
func live(inboxes []*inbox) []*inbox {
	return slices.DeleteFunc(inboxes, func(in *inbox) bool {
		select {
		case <-in.ended:
			return true
		default:
			return false
		}
	})
}

// drainInboxes unsubscribes so that the server sends no more, while what
// it sent already still reaches the pool; bounded by the stop's grace.
// It waits for each subscription's last callback, which comes at once when
// the connection is closed: a closed subscription's status never changes
// then, and its Unsubscribe fails.
func (r *jsRun) drainInboxes(nc *nats.Conn, inboxes []*inbox) {
	deadline := time.Now().Add(jsapi.Timeout)
	if by := r.stopBy.Load(); by != 0 {
		deadline = time.Unix(0, by)
	}
	for _, in := range inboxes {
		if !nc.IsConnected() || in.sub.Drain() != nil {
			_ = in.sub.Unsubscribe() // nothing can arrive; do not wait
		}
	}
	t := time.NewTimer(time.Until(deadline))
	defer t.Stop()
	for i, in := range inboxes {
		select {
		case <-in.ended:
		case <-t.C:
			for _, in := range inboxes[i:] {
				_ = in.sub.Unsubscribe()
			}
			return
		}
	}
}

// dropCredits takes n from the inbox's credits, never below zero.
func (in *inbox) dropCredits(n int64) {
	for {
		c := in.credits.Load()
		if in.credits.CompareAndSwap(c, max(c-n, 0)) {
			return
		}
	}
}

// hold counts a message as held unless the pool is full; it reports
// whether it did.
func (r *jsRun) hold() bool {
	for {
		h := r.held.Load()
		if h >= int64(r.capacity) {
			return false
		}
		if r.held.CompareAndSwap(h, h+1) {
			for peak := &r.j.stats.peakHeld; ; {
				p := peak.Load()
				if h+1 <= p || peak.CompareAndSwap(p, h+1) {
					return true
				}
			}
		}
	}
}

// receive is in's callback: messages go to the pool, statuses to the
// puller. It never blocks.
func (r *jsRun) receive(nc *nats.Conn, in *inbox, msg *nats.Msg) {
	j := r.j
	in.heard.Store(time.Now().UnixNano())
	status := msg.Header.Get("Status")
	if len(msg.Data) > 0 || status == "" {
		meta, err := metadata(msg)
		if err != nil {
			in.dropCredits(1)
			j.stats.dropped.Add(1) // not from JetStream: nothing to ack
			return
		}
		m := &Msg{raw: msg, nc: nc, handler: j.name, meta: meta}
		m.alive.Store(time.Now().UnixNano())
		j.numPending.Store(meta.NumPending)
		j.stats.received.Add(1)
		if meta.NumDelivered > 1 {
			j.stats.redelivered.Add(1)
		}
		// Held before its credit is taken, and the puller reads credits
		// before held: it never sees room the message already fills.
		held := r.hold()
		in.dropCredits(1)
		if !held {
			// More than the pool has room for (a request presumed lost
			// delivered after all): back to the server at once.
			if m.Nak(0) == nil {
				j.stats.naked.Add(1)
			}
			r.returned.Add(1)
			return
		}
		r.heldMu.Lock()
		r.heldSet[m] = struct{}{}
		r.heldMu.Unlock()
		r.pool.queue <- m // held <= capacity = cap(queue)
		return
	}
	// A request ended: its undelivered part is no longer owed.
	if n, err := strconv.Atoi(msg.Header.Get("Nats-Pending-Messages")); err == nil && n > 0 {
		in.dropCredits(int64(n))
	}
	var err error
	desc := strings.ToLower(msg.Header.Get("Description"))
	switch status {
	case "100": // idle heartbeat or flow control
		if msg.Reply != "" {
			_ = msg.Respond(nil)
		}
		return
	case "404", "408":
		err = errRequestDone
	case "409":
		switch {
		case strings.Contains(desc, "consumer deleted"):
			err = jetstream.ErrConsumerDeleted
		case strings.Contains(desc, "leadership change"):
			// The requests went with the old leader, pending or not.
			err = fmt.Errorf("%w: %w", errRequestLost, jetstream.ErrConsumerLeadershipChanged)
		case strings.Contains(desc, "server shutdown"):
			err = jetstream.ErrServerShutdown
		case strings.Contains(desc, "exceeded max") || strings.Contains(desc, "push based"):
			err = fmt.Errorf("%w: %s", ErrPullStatus, msg.Header.Get("Description"))
		default:
			err = errRequestDone // e.g. max bytes or batch completed: the request is over
		}
	case "503":
		err = nats.ErrNoResponders
	case "400":
		err = fmt.Errorf("%w: %s", jetstream.ErrBadRequest, msg.Header.Get("Description"))
	default:
		err = fmt.Errorf("%w: status %s %s", ErrPullStatus, status, msg.Header.Get("Description"))
	}
	if in.retired.Load() && (errors.Is(err, errRequestDone) || errors.Is(err, errRequestLost)) {
		// The end or loss of a request the puller no longer counts on:
		// the current inbox hears of its own.
		return
	}
	// Keep the newest status: an older one it replaces is stale.
	for {
		select {
		case r.status <- err:
			return
		default:
		}
		select {
		case <-r.status:
		default:
		}
	}
}

func nextRetry(d time.Duration) time.Duration {
	if d == 0 {
		return retryMin
	}
	return min(2*d, retryMax)
}

func (j *jsHandler) consumeError(err error) {
	j.events.Emit(ConsumeError{EventTime: j.events.Stamp(), Handler: j.name, Stream: j.cfg.Stream,
		Consumer: j.cfg.Consumer, Err: err})
}

// invoke runs the handler, unless the message can only be dead-lettered
// again or can no longer be acked.
func (r *jsRun) invoke(ctx context.Context, m *Msg) error {
	if m.nc.IsClosed() {
		return errConnClosed
	}
	if r.deadLetterClient && m.meta.NumDelivered > uint64(r.maxDeliver.Load()) {
		return errPastMaxDeliver
	}
	return r.j.h.Handle(ctx, m)
}

// after settles a message the handler is done with, then frees its room.
// Settling runs the handler's error's methods (Error, Is, As): a panic
// there is recovered like one in the handler, and the message is naked.
func (r *jsRun) after(ctx context.Context, _ int, m *Msg, err error) {
	defer r.release(m)
	defer func() {
		if v := recover(); v != nil {
			pe := &supervisor.PanicError{Value: v, Stack: debug.Stack()}
			r.j.stats.panicked.Add(1)
			r.pool.panicked(m, pe)
			if m.Nak(r.j.backoff(m)) == nil {
				r.j.stats.naked.Add(1)
			}
		}
	}()
	r.settle(ctx, m, err)
}

// skip hands back a message that did not start, for redelivery at once.
func (r *jsRun) skip(m *Msg) {
	if m.Nak(0) == nil {
		r.j.stats.naked.Add(1)
	}
	r.returned.Add(1)
	r.release(m)
}

func (r *jsRun) release(m *Msg) {
	r.heldMu.Lock()
	delete(r.heldSet, m)
	r.heldMu.Unlock()
	r.held.Add(-1)
	select {
	case r.freed <- struct{}{}:
	default:
	}
}

// keep sends in-progress acks for every held message, running or queued,
// that the server last heard of a third of an ack wait ago or more, from
// one goroutine for all of them, until stop is closed. It ticks every
// sixth of the ack wait, so an ack goes out by half the ack wait at the
// latest: the other half is margin for a loaded machine or network.
func (r *jsRun) keep(stop <-chan struct{}, done chan<- struct{}) {
	defer close(done)
	// The tick follows the ack wait, which changes when a bound consumer
	// is read again.
	tick := func() time.Duration { return max(time.Duration(r.ackWait.Load())/6, 10*time.Millisecond) }
	t := time.NewTimer(tick())
	defer t.Stop()
	var due []*Msg
	for {
		select {
		case <-stop:
			return
		case now := <-t.C:
			t.Reset(tick())
			ackWait := time.Duration(r.ackWait.Load())
			due = due[:0]
			r.heldMu.Lock()
			for m := range r.heldSet {
				if now.Sub(time.Unix(0, m.alive.Load())) >= ackWait/3 {
					due = append(due, m)
				}
			}
			r.heldMu.Unlock()
			for _, m := range due {
				if m.InProgress() == nil {
					r.j.stats.inProgress.Add(1)
				}
			}
		}
	}
}

// settle acks, naks, terminates or dead-letters m according to err, unless
// the handler settled it already.
func (r *jsRun) settle(ctx context.Context, m *Msg, err error) {
	j := r.j
	if m.isSettled() {
		return
	}
	var term *TerminalError
	switch {
	case errors.Is(err, errConnClosed):
		j.stats.ackFailed.Add(1) // redelivered after its ack wait
	case r.pool.base.Err() != nil && errors.Is(err, context.Canceled):
		// Cut off by the stop's deadline, not failed: handed back for
		// redelivery at once, never delayed or dead-lettered.
		if m.Nak(0) == nil {
			j.stats.naked.Add(1)
		}
		r.returned.Add(1)
	case err == nil:
		var aerr error
		if j.cfg.DoubleAck {
			actx, cancel := context.WithTimeout(context.WithoutCancel(ctx), jsapi.Timeout)
			aerr = m.DoubleAck(actx)
			cancel()
		} else {
			aerr = m.Ack()
		}
		if aerr != nil {
			j.stats.ackFailed.Add(1)
		} else {
			j.stats.acked.Add(1)
		}
	case errors.As(err, &term):
		if m.Term(errText(term.Err)) == nil {
			j.stats.terminated.Add(1)
		}
	case j.cfg.DeadLetter != "" && r.maxDeliver.Load() > 0 && m.meta.NumDelivered >= uint64(r.maxDeliver.Load()):
		r.deadLetter(ctx, m, err)
	default:
		if m.Nak(j.backoff(m)) == nil {
			j.stats.naked.Add(1)
		}
	}
}

// backoff is the nak delay for m's delivery count.
func (j *jsHandler) backoff(m *Msg) time.Duration {
	n := 1
	if m.meta != nil {
		n = int(m.meta.NumDelivered)
	}
	return j.cfg.Backoff[min(max(n-1, 0), len(j.cfg.Backoff)-1)]
}

// deadLetter publishes m to the dead-letter subject and terminates it once
// a stream has acknowledged the copy. If the publish fails, m is naked:
// it is delivered again (max deliveries are counted here, not by the
// server, when a dead-letter subject is set) and the copy is tried again.
func (r *jsRun) deadLetter(ctx context.Context, m *Msg, cause error) {
	j := r.j
	ev := DeadLettered{EventTime: j.events.Stamp(), Handler: j.name, Stream: j.cfg.Stream, Consumer: j.cfg.Consumer,
		Subject: m.Subject(), DeadLetter: j.cfg.DeadLetter, Sequence: m.meta.Sequence.Stream,
		Deliveries: m.meta.NumDelivered, Err: cause}
	out := nats.NewMsg(j.cfg.DeadLetter)
	out.Data = m.Data()
	for k, v := range m.Header() {
		// Headers that would act on the dead-letter stream are dropped.
		if !actsOnStream(k) {
			out.Header[k] = append([]string(nil), v...)
		}
	}
	out.Header.Set(DeadLetterStreamHeader, j.cfg.Stream)
	out.Header.Set(DeadLetterConsumerHeader, j.cfg.Consumer)
	out.Header.Set(DeadLetterSubjectHeader, m.Subject())
	out.Header.Set(DeadLetterSequenceHeader, strconv.FormatUint(m.meta.Sequence.Stream, 10))
	out.Header.Set(DeadLetterDeliveriesHeader, strconv.FormatUint(m.meta.NumDelivered, 10))
	reason := errText(cause)
	out.Header.Set(DeadLetterErrorHeader, reason)
	// A retried dead-letter publish is not stored twice; the stream, the
	// consumer and the message's time tell apart copies of different
	// messages with the same sequence.
	out.Header.Set(jetstream.MsgIDHeader, fmt.Sprintf("dead-letter.%s.%s.%d.%d",
		j.cfg.Stream, j.cfg.Consumer, m.meta.Sequence.Stream, m.meta.Timestamp.UnixNano()))

	var err error
	if js := r.js.Load(); js == nil {
		err = jsapi.ErrConnGone
	} else {
		pctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), jsapi.Timeout)
		_, err = (*js).PublishMsg(pctx, out)
		cancel()
	}
	if err != nil {
		_ = m.Nak(j.backoff(m))
		j.stats.deadLetterFailed.Add(1)
		j.events.Emit(DeadLetterFailed{DeadLettered: ev, PublishErr: err})
		return
	}
	if m.Term("dead-lettered to "+j.cfg.DeadLetter+": "+reason) == nil {
		j.stats.deadLettered.Add(1)
	}
	j.events.Emit(ev)
}

// errText is err's message: empty for nil, and a note in place of the
// message when Error panics (a typed nil whose method dereferences it).
func errText(err error) (text string) {
	if err == nil {
		return ""
	}
	defer func() {
		if recover() != nil {
			text = fmt.Sprintf("%T (its Error method panicked)", err)
		}
	}()
	return err.Error()
}

// actsOnStream reports headers that tell a stream what to do with a
// message (expectations, rollups, TTLs, schedules, batches, its Msg-Id).
func actsOnStream(header string) bool {
	for _, prefix := range []string{"Nats-Expected-", "Nats-Rollup", "Nats-TTL", "Nats-Schedule", "Nats-Batch-", "Nats-Msg-Id"} {
		if strings.HasPrefix(header, prefix) {
			return true
		}
	}
	return false
}

// watchAdvisories reports the server's max-deliveries advisories for the
// consumer; it returns the function that stops.
func (j *jsHandler) watchAdvisories(nc *nats.Conn) func() {
	subject := fmt.Sprintf("$JS.EVENT.ADVISORY.CONSUMER.MAX_DELIVERIES.%s.%s", j.cfg.Stream, j.cfg.Consumer)
	sub, err := nc.Subscribe(subject, func(msg *nats.Msg) {
		var adv struct {
			StreamSeq  uint64 `json:"stream_seq"`
			Deliveries uint64 `json:"deliveries"`
		}
		if json.Unmarshal(msg.Data, &adv) != nil {
			return
		}
		j.events.Emit(MaxDeliveries{EventTime: j.events.Stamp(), Handler: j.name, Stream: j.cfg.Stream,
			Consumer: j.cfg.Consumer, Sequence: adv.StreamSeq, Deliveries: adv.Deliveries})
	})
	if err != nil {
		return func() {}
	}
	return func() { _ = sub.Unsubscribe() }
}
