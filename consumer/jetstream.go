package consumer

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/corral-go/corral/connection"
)

const (
	// pullExpiry bounds each pull request; a request that brings nothing
	// is renewed, so an idle handler costs one request per expiry.
	pullExpiry = 10 * time.Second
	// pullHeartbeat is the server's heartbeat on a waiting pull request:
	// two missed ones end it and a new one is sent, which is how a lost
	// request (server restart, leader change) is replaced.
	pullHeartbeat = 2 * time.Second
	// apiTimeout bounds JetStream API calls and dead-letter publishes.
	apiTimeout = 10 * time.Second
	// retryMin and retryMax bound the wait before pulling again after a
	// pull failed, so a missing consumer or stream is not hammered.
	retryMin = 100 * time.Millisecond
	retryMax = 5 * time.Second
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

// errConnGone means the connection closed for good; the handler asks for
// its replacement.
var errConnGone = errors.New("connection replaced")

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
	// messages pulled and not yet settled, credits those requested and not
	// yet delivered. Requests keep held + credits within capacity.
	capacity int
	held     atomic.Int64
	credits  atomic.Int64
	freed    chan struct{} // a message was settled
	status   chan error    // what the server said about a pull request
	heard    atomic.Int64  // unix nanoseconds of the last message or heartbeat
	js       atomic.Pointer[jetstream.JetStream]
	slots    []slot // what each worker runs, for in-progress acks
	returned atomic.Uint64
}

// slot is one worker's current message and when it last told the server
// it is still working on it.
type slot struct {
	mu   sync.Mutex
	m    *Msg
	last time.Time
}

func (j *jsHandler) Serve(ctx context.Context) error {
	r := &jsRun{j: j, capacity: j.cfg.Workers + j.cfg.QueueSize,
		freed: make(chan struct{}, 1), status: make(chan error, 16)}
	r.slots = make([]slot, j.cfg.Workers)
	cfg := j.cfg
	// Room for twice the capacity: after a pull request is presumed lost
	// (missed heartbeats, a reconnect) it may still deliver, and the
	// inbox must never block on the queue.
	cfg.QueueSize = 2 * r.capacity
	p := newPool(j.name, cfg, j.events, j.stats, j.h.Handle)
	p.subject = j.cfg.Stream
	p.returnQueued = true
	p.before, p.after, p.skip = r.before, r.after, r.skip
	p.load = func() int { return int(r.held.Load()) }
	p.streamPending = &j.numPending
	r.pool = p
	j.current.Store(p)
	p.start()
	keeperDone := make(chan struct{})
	keeperStop := make(chan struct{})
	go r.keep(keeperStop, keeperDone)
	defer func() {
		close(keeperStop)
		<-keeperDone
	}()

	for {
		nc, gone, err := j.conns.Conn(ctx)
		if err != nil {
			break
		}
		js, err := jetstream.New(nc)
		if err != nil {
			r.stop()
			return err
		}
		r.js.Store(&js)
		if _, err := j.ensure(ctx, js); err != nil {
			r.stop()
			if ctx.Err() != nil {
				return ctx.Err()
			}
			return err
		}
		unwatch := j.watchAdvisories(nc)
		err = r.pull(ctx, nc, js, gone)
		unwatch()
		if ctx.Err() != nil {
			break
		}
		if errors.Is(err, errConnGone) {
			continue
		}
		r.stop()
		return err
	}
	r.stop()
	return ctx.Err()
}

// stop hands back what did not start and lets what runs finish.
func (r *jsRun) stop() {
	start, before := time.Now(), r.pool.handled()
	finished, _ := r.pool.stop(start.Add(grace(r.j.cfg.Restart.ShutdownTimeout)), before)
	r.j.events.Emit(Drained{EventTime: r.j.events.Now(), Handler: r.j.name, Subject: r.j.cfg.Stream,
		Finished: finished, Returned: r.returned.Swap(0), Took: time.Since(start)})
}

// ensure declares the stream (if asked) and the consumer, or checks that
// the bound consumer exists. created reports a consumer that did not.
func (j *jsHandler) ensure(ctx context.Context, js jetstream.JetStream) (created bool, err error) {
	ctx, cancel := context.WithTimeout(ctx, apiTimeout)
	defer cancel()
	c := j.cfg
	if c.CreateStream != nil {
		if _, err := c.CreateStream.Declare(ctx, js, c.Stream); err != nil {
			return false, err
		}
	}
	_, infoErr := js.Consumer(ctx, c.Stream, c.Consumer)
	if c.Bind {
		if infoErr != nil {
			return false, fmt.Errorf("bind consumer %s of stream %s: %w", c.Consumer, c.Stream, infoErr)
		}
		return false, nil
	}
	if _, err := js.CreateOrUpdateConsumer(ctx, c.Stream, c.consumerConfig()); err != nil {
		var apiErr *jetstream.APIError
		if errors.As(err, &apiErr) && strings.Contains(strings.ToLower(apiErr.Description), "can not be updated") {
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

// Statuses a pull request ends with; they are not failures.
var (
	errRequestDone = errors.New("pull request done")
)

// pull sends pull requests for the pool's free room, from one inbox,
// until ctx ends, the connection is gone, or the consumer fails for good.
// Before it returns, the inbox is drained, so that every message the
// server sent reaches the pool, which hands back what it will not start.
func (r *jsRun) pull(ctx context.Context, nc *nats.Conn, js jetstream.JetStream, gone <-chan struct{}) error {
	j := r.j
	inbox := nc.NewInbox()
	sub, err := nc.Subscribe(inbox, func(msg *nats.Msg) { r.receive(nc, msg) })
	if err != nil {
		if errors.Is(err, nats.ErrConnectionClosed) {
			return errConnGone
		}
		return err
	}
	r.pool.feed(sub)
	// Requests bound what arrives; the inbox buffers it all.
	_ = sub.SetPendingLimits(-1, -1)
	defer r.drainInbox(sub)
	r.credits.Store(0)
	r.heard.Store(time.Now().UnixNano())
	j.ready.Store(true)
	defer j.ready.Store(false)
	j.events.Emit(Subscribed{EventTime: j.events.Now(), Handler: j.name, Subject: j.cfg.Subject,
		Stream: j.cfg.Stream, Consumer: j.cfg.Consumer})

	var watch <-chan struct{}
	var reconnects uint64
	w, watching := j.conns.(interface {
		Watch() (connection.Status, <-chan struct{})
	})
	if watching {
		var st connection.Status
		st, watch = w.Watch()
		reconnects = st.Stats.Reconnects
	}

	subject := "$JS.API.CONSUMER.MSG.NEXT." + j.cfg.Stream + "." + j.cfg.Consumer
	threshold := max(1, r.capacity/2)
	retry := time.Duration(0)
	var notBefore, fullSince time.Time
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	for {
		now := time.Now()
		credits := r.credits.Load()
		free := r.capacity - int(r.held.Load()) - int(credits)
		// Like nats.go's Consume, ask again once half the room is free:
		// asking for every freed slot would double the server's work.
		if free >= threshold && !now.Before(notBefore) {
			req, _ := json.Marshal(pullRequest{Batch: free, Expires: pullExpiry, Heartbeat: pullHeartbeat})
			if err := nc.PublishRequest(subject, inbox, req); err != nil {
				if errors.Is(err, nats.ErrConnectionClosed) {
					return errConnGone
				}
				j.consumeError(err)
				retry = nextRetry(retry)
				notBefore = now.Add(retry)
			} else {
				if credits == 0 {
					r.heard.Store(now.UnixNano()) // heartbeats are due from now
				}
				r.credits.Add(int64(free))
			}
		}

		// Full for longer than SlowAfter: a slow consumer, reported once an
		// episode.
		wait := pullHeartbeat
		if int(r.held.Load()) >= r.capacity {
			if fullSince.IsZero() {
				fullSince = now
			}
			if since := now.Sub(fullSince); since >= j.cfg.SlowAfter {
				r.pool.overflow()
				wait = min(wait, episodeTick)
			} else {
				wait = min(wait, j.cfg.SlowAfter-since)
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
			return errConnGone
		case <-r.freed:
		case <-timer.C:
			// Requests are out but nothing, not even a heartbeat, came for
			// two heartbeats: the server lost them (restart, leader change).
			if r.credits.Load() > 0 && time.Since(time.Unix(0, r.heard.Load())) > 2*pullHeartbeat {
				r.credits.Store(0)
				j.consumeError(jetstream.ErrNoHeartbeat)
			}
		case <-watch:
			var st connection.Status
			st, watch = w.Watch()
			if st.State == connection.StateConnected && st.Stats.Reconnects != reconnects {
				// Requests do not survive a reconnect: ask again now rather
				// than after missed heartbeats.
				reconnects = st.Stats.Reconnects
				r.credits.Store(0)
			}
		case err := <-r.status:
			switch {
			case errors.Is(err, errRequestDone), errors.Is(err, jetstream.ErrConsumerLeadershipChanged),
				errors.Is(err, jetstream.ErrServerShutdown):
				retry = 0
			case errors.Is(err, jetstream.ErrBadRequest):
				return fmt.Errorf("pull from consumer %s of stream %s: %w", j.cfg.Consumer, j.cfg.Stream, err)
			case errors.Is(err, jetstream.ErrConsumerDeleted), errors.Is(err, nats.ErrNoResponders):
				// The consumer, its stream or JetStream is gone or moving:
				// declare it again, or fail when bound to it.
				j.consumeError(err)
				r.credits.Store(0)
				created, err := j.ensure(ctx, js)
				switch {
				case err != nil && j.cfg.Bind:
					return err
				case err != nil:
					j.consumeError(err)
				case created:
					j.events.Emit(ConsumerRecreated{EventTime: j.events.Now(), Handler: j.name,
						Stream: j.cfg.Stream, Consumer: j.cfg.Consumer})
				}
				retry = nextRetry(retry)
				notBefore = time.Now().Add(retry)
			default:
				j.consumeError(err)
				retry = nextRetry(retry)
				notBefore = time.Now().Add(retry)
			}
		}
	}
}

// receive is the inbox callback: messages go to the pool, statuses to the
// puller.
func (r *jsRun) receive(nc *nats.Conn, msg *nats.Msg) {
	j := r.j
	r.heard.Store(time.Now().UnixNano())
	status := msg.Header.Get("Status")
	if len(msg.Data) > 0 || status == "" {
		m := &Msg{raw: msg, nc: nc, handler: j.name, pulled: time.Now()}
		meta, err := metadata(msg)
		if err != nil {
			return // not a JetStream message: nothing to ack
		}
		m.meta = meta
		j.numPending.Store(meta.NumPending)
		if meta.NumDelivered > 1 {
			j.stats.redelivered.Add(1)
		}
		r.held.Add(1)
		if r.credits.Add(-1) < 0 {
			r.credits.Store(0)
		}
		j.stats.received.Add(1)
		r.pool.queue <- m // requests were sized to the room
		return
	}
	// A request ended: its undelivered part is no longer owed.
	if n, err := strconv.Atoi(msg.Header.Get("Nats-Pending-Messages")); err == nil && n > 0 {
		if r.credits.Add(-int64(n)) < 0 {
			r.credits.Store(0)
		}
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
			err = jetstream.ErrConsumerLeadershipChanged
		case strings.Contains(desc, "server shutdown"):
			err = jetstream.ErrServerShutdown
		default:
			err = fmt.Errorf("pull request: %s", msg.Header.Get("Description"))
		}
	case "503":
		err = nats.ErrNoResponders
	case "400":
		err = fmt.Errorf("%w: %s", jetstream.ErrBadRequest, msg.Header.Get("Description"))
	default:
		err = fmt.Errorf("pull request: status %s %s", status, msg.Header.Get("Description"))
	}
	select {
	case r.status <- err:
	default: // the puller has statuses to read; it also polls
	}
}

// drainInbox unsubscribes so that the server sends no more, while every
// message already sent is still delivered to the pool.
func (r *jsRun) drainInbox(sub *nats.Subscription) {
	closed := sub.StatusChanged(nats.SubscriptionClosed)
	if sub.Drain() != nil {
		return
	}
	t := time.NewTimer(apiTimeout)
	defer t.Stop()
	select {
	case <-closed:
	case <-t.C:
		_ = sub.Unsubscribe()
	}
}

func nextRetry(d time.Duration) time.Duration {
	if d == 0 {
		return retryMin
	}
	return min(2*d, retryMax)
}

func (j *jsHandler) consumeError(err error) {
	j.events.Emit(ConsumeError{EventTime: j.events.Now(), Handler: j.name, Stream: j.cfg.Stream,
		Consumer: j.cfg.Consumer, Err: err})
}

// before runs when a worker starts a message: it is now kept alive.
func (r *jsRun) before(worker int, m *Msg) {
	now := time.Now()
	s := &r.slots[worker]
	s.mu.Lock()
	s.m, s.last = m, m.pulled
	s.mu.Unlock()
	if now.Sub(m.pulled) >= r.j.cfg.AckWait/2 {
		// It waited long in the queue; reset its clock before starting.
		_ = m.InProgress()
		s.mu.Lock()
		s.last = now
		s.mu.Unlock()
	}
}

// after settles a message the handler is done with, then frees its room.
func (r *jsRun) after(worker int, ctx context.Context, m *Msg, err error) {
	s := &r.slots[worker]
	s.mu.Lock()
	s.m = nil
	s.mu.Unlock()
	r.settle(ctx, m, err)
	r.release()
}

// skip hands back a message that did not start, for redelivery at once.
func (r *jsRun) skip(m *Msg) {
	if m.Nak(0) == nil {
		r.j.stats.naked.Add(1)
	}
	r.returned.Add(1)
	r.release()
}

func (r *jsRun) release() {
	r.held.Add(-1)
	select {
	case r.freed <- struct{}{}:
	default:
	}
}

// keep sends in-progress acks for handlers running for more than half the
// ack wait, from one goroutine for all workers, until stop is closed.
func (r *jsRun) keep(stop <-chan struct{}, done chan<- struct{}) {
	defer close(done)
	every := max(r.j.cfg.AckWait/4, 10*time.Millisecond)
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-stop:
			return
		case now := <-t.C:
			for i := range r.slots {
				s := &r.slots[i]
				s.mu.Lock()
				if s.m != nil && now.Sub(s.last) >= r.j.cfg.AckWait/2 {
					if s.m.InProgress() == nil {
						r.j.stats.inProgress.Add(1)
					}
					s.last = now
				}
				s.mu.Unlock()
			}
		}
	}
}

// settle acks, naks, terminates or dead-letters m according to err, unless
// the handler settled it already.
func (r *jsRun) settle(ctx context.Context, m *Msg, err error) {
	j := r.j
	if m.settled.Load() {
		return
	}
	var term *TerminalError
	switch {
	case err == nil:
		var aerr error
		if j.cfg.DoubleAck {
			actx, cancel := context.WithTimeout(context.Background(), apiTimeout)
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
		if m.Term(term.Err.Error()) == nil {
			j.stats.terminated.Add(1)
		}
	case j.cfg.MaxDeliver > 0 && m.meta != nil && m.meta.NumDelivered >= uint64(j.cfg.MaxDeliver) && j.cfg.DeadLetter != "":
		r.deadLetter(m, err)
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
// a stream has acknowledged the copy. If the publish fails, m is naked,
// not terminated: it stays in its stream.
func (r *jsRun) deadLetter(m *Msg, cause error) {
	j := r.j
	ev := DeadLettered{EventTime: j.events.Now(), Handler: j.name, Stream: j.cfg.Stream, Consumer: j.cfg.Consumer,
		Subject: m.Subject(), DeadLetter: j.cfg.DeadLetter, Sequence: m.meta.Sequence.Stream,
		Deliveries: m.meta.NumDelivered, Err: cause}
	out := nats.NewMsg(j.cfg.DeadLetter)
	out.Data = m.Data()
	for k, v := range m.Header() {
		out.Header[k] = append([]string(nil), v...)
	}
	out.Header.Set(DeadLetterStreamHeader, j.cfg.Stream)
	out.Header.Set(DeadLetterConsumerHeader, j.cfg.Consumer)
	out.Header.Set(DeadLetterSubjectHeader, m.Subject())
	out.Header.Set(DeadLetterSequenceHeader, strconv.FormatUint(m.meta.Sequence.Stream, 10))
	out.Header.Set(DeadLetterDeliveriesHeader, strconv.FormatUint(m.meta.NumDelivered, 10))
	out.Header.Set(DeadLetterErrorHeader, cause.Error())
	// A retried dead-letter publish is not stored twice.
	out.Header.Set(jetstream.MsgIDHeader, fmt.Sprintf("dead-letter.%s.%d", j.cfg.Stream, m.meta.Sequence.Stream))

	var err error
	if js := r.js.Load(); js == nil {
		err = errConnGone
	} else {
		ctx, cancel := context.WithTimeout(context.Background(), apiTimeout)
		_, err = (*js).PublishMsg(ctx, out)
		cancel()
	}
	if err != nil {
		_ = m.Nak(j.backoff(m))
		j.stats.deadLetterFailed.Add(1)
		j.events.Emit(DeadLetterFailed{DeadLettered: ev, PublishErr: err})
		return
	}
	if m.Term("dead-lettered to "+j.cfg.DeadLetter+": "+cause.Error()) == nil {
		j.stats.deadLettered.Add(1)
	}
	j.events.Emit(ev)
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
		j.events.Emit(MaxDeliveries{EventTime: j.events.Now(), Handler: j.name, Stream: j.cfg.Stream,
			Consumer: j.cfg.Consumer, Sequence: adv.StreamSeq, Deliveries: adv.Deliveries})
	})
	if err != nil {
		return func() {}
	}
	return func() { _ = sub.Unsubscribe() }
}
