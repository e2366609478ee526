package consumer

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/corral-go/corral/connection"
	"github.com/corral-go/corral/internal/jsapi"
	"github.com/corral-go/corral/internal/redeclare"
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

// pullRequest is the body of a JetStream pull request.
type pullRequest struct {
	Batch     int           `json:"batch"`
	Expires   time.Duration `json:"expires"`
	Heartbeat time.Duration `json:"idle_heartbeat"`
}

// puller asks the consumer for messages on one connection: pull requests
// for the room its run has free, on its current inbox, and acts on what
// their statuses say.
type puller struct {
	r         *jsRun
	nc        *nats.Conn
	js        jetstream.JetStream
	gone      <-chan struct{} // the connection closed for good
	subject   string          // the consumer's next-message API subject
	threshold int             // the least room worth asking for

	in      *inbox
	retired []*inbox // replaced inboxes still draining

	watch      <-chan struct{} // the connection's state changed
	reconnects uint64

	retry       time.Duration // the wait after the last failure
	notBefore   time.Time     // no request before
	fullSince   time.Time     // the run has held all it can since
	redeclareAt time.Time     // declare the consumer again at
	timer       *time.Timer
}

// pull sends pull requests for the run's free room until ctx ends, the
// connection is gone, or the consumer fails for good. Before it returns,
// the inboxes are drained (within the stop's grace), so that what the
// server sent reaches the pool, which hands back what it will not start.
func (r *jsRun) pull(ctx context.Context, nc *nats.Conn, js jetstream.JetStream, gone <-chan struct{}) error {
	j := r.j
	in, err := r.openInbox(nc)
	if err != nil {
		if errors.Is(err, nats.ErrConnectionClosed) {
			return jsapi.ErrConnGone
		}
		return err
	}
	p := &puller{r: r, nc: nc, js: js, gone: gone, in: in,
		subject:   "$JS.API.CONSUMER.MSG.NEXT." + j.cfg.Stream + "." + j.cfg.Consumer,
		threshold: max(1, r.held.capacity/2)}
	j.ready.Store(true)
	defer func() {
		if ctx.Err() != nil {
			r.beginStop()
		}
		j.ready.Store(false)
		r.drainInboxes(nc, append(p.retired, p.in))
	}()

	j.events.Emit(Subscribed{EventTime: j.events.Stamp(), Handler: j.name, Subject: j.cfg.Subject,
		Stream: j.cfg.Stream, Consumer: j.cfg.Consumer})
	st, watch := j.src.Watch()
	p.watch, p.reconnects = watch, st.Stats.Reconnects
	p.timer = time.NewTimer(time.Hour)
	defer p.timer.Stop()
	for {
		now, err := p.redeclareIfDue(ctx, time.Now())
		if err != nil {
			return err
		}
		p.replaceIfSilent(now)
		if err := p.request(now); err != nil {
			return err
		}
		p.timer.Reset(p.wait(now))
		if err := p.await(ctx); err != nil {
			return err
		}
	}
}

// redeclareIfDue declares the consumer again once its time has come; it
// returns the time after that, and an error only when the handler is
// bound to the consumer.
func (p *puller) redeclareIfDue(ctx context.Context, now time.Time) (time.Time, error) {
	if p.redeclareAt.IsZero() || now.Before(p.redeclareAt) {
		return now, nil
	}
	j := p.r.j
	p.redeclareAt = time.Time{}
	created, err := p.r.ensure(ctx, p.js)
	switch {
	case err != nil && j.cfg.Bind:
		return now, err
	case err != nil:
		j.consumeError(err)
	case created:
		j.events.Emit(ConsumerRecreated{EventTime: j.events.Stamp(), Handler: j.name,
			Stream: j.cfg.Stream, Consumer: j.cfg.Consumer})
	}
	p.backOff(time.Now())
	return time.Now(), nil
}

// replaceIfSilent replaces the inbox when requests are out but nothing,
// not even a heartbeat, came for two heartbeats: the server lost them
// (restart, pause, leader change).
func (p *puller) replaceIfSilent(now time.Time) {
	if p.in.credits.Load() > 0 && now.Sub(time.Unix(0, p.in.heard.Load())) > 2*pullHeartbeat {
		p.replace(jetstream.ErrNoHeartbeat)
	}
}

// request asks for the run's free room, once enough is free; it fails
// only when the connection is gone.
func (p *puller) request(now time.Time) error {
	credits := p.in.credits.Load() // before held: see accept
	free := p.r.held.capacity - p.r.held.count() - int(credits)
	// Like nats.go's Consume, ask again once half the room is free:
	// asking for every freed slot would double the server's work.
	if free < p.threshold || now.Before(p.notBefore) || !p.nc.IsConnected() {
		return nil
	}
	req, _ := json.Marshal(pullRequest{Batch: free, Expires: pullExpiry, Heartbeat: pullHeartbeat})
	p.in.credits.Add(int64(free))
	p.in.heard.Store(now.UnixNano()) // heartbeats are due from now
	if err := p.nc.PublishRequest(p.subject, p.in.subject, req); err != nil {
		p.in.dropCredits(int64(free))
		if errors.Is(err, nats.ErrConnectionClosed) {
			return jsapi.ErrConnGone
		}
		p.r.j.consumeError(err)
		p.backOff(now)
	}
	return nil
}

// wait is how long the puller may wait for something to happen. A run
// that has held all it can for longer than SlowAfter is a slow consumer,
// reported once an episode.
func (p *puller) wait(now time.Time) time.Duration {
	wait := pullHeartbeat / 2
	if p.r.held.count() >= p.r.held.capacity {
		if p.fullSince.IsZero() {
			p.fullSince = now
		}
		if since, slowAfter := now.Sub(p.fullSince), p.r.slowAfter(); since >= slowAfter {
			p.r.slow.overflow()
			wait = min(wait, episodeTick)
		} else {
			wait = min(wait, slowAfter-since)
		}
	} else {
		p.fullSince = time.Time{}
	}
	if now.Before(p.notBefore) {
		wait = min(wait, p.notBefore.Sub(now))
	}
	return wait
}

// await waits for room, a status, a change of connection or the timer.
func (p *puller) await(ctx context.Context) error {
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-p.gone:
		return jsapi.ErrConnGone
	case <-p.r.held.freed:
	case <-p.timer.C:
	case <-p.watch:
		var st connection.Status
		st, p.watch = p.r.j.src.Watch()
		if st.State == connection.StateConnected && st.Stats.Reconnects != p.reconnects {
			// Requests do not survive a reconnect: ask again now on a
			// fresh inbox rather than after missed heartbeats.
			p.reconnects = st.Stats.Reconnects
			p.replace(nil)
		}
	case err := <-p.r.status:
		return p.actOn(err)
	}
	return nil
}

// actOn acts on a pull request's status; it fails for a status the
// handler cannot recover from.
func (p *puller) actOn(status error) error {
	j := p.r.j
	switch {
	case errors.Is(status, errRequestDone), errors.Is(status, jetstream.ErrServerShutdown):
		p.retry = 0
	case errors.Is(status, errRequestLost):
		p.replace(status)
	case errors.Is(status, jetstream.ErrBadRequest), errors.Is(status, ErrPullStatus):
		return fmt.Errorf("pull from consumer %s of stream %s: %w", j.cfg.Consumer, j.cfg.Stream, status)
	case errors.Is(status, jetstream.ErrConsumerDeleted), errors.Is(status, nats.ErrNoResponders):
		// The consumer, its stream or JetStream is gone or moving: declare
		// it again once a deletion has had time to finish, or fail when
		// bound to it.
		p.replace(status)
		if p.redeclareAt.IsZero() {
			p.redeclareAt = time.Now().Add(redeclareAfter)
		}
		p.notBefore = p.redeclareAt
	default:
		j.consumeError(status)
		p.backOff(time.Now())
	}
	return nil
}

// replace moves requests to a fresh inbox, reporting cause if any; the
// old one drains. When no inbox can be opened, the old one stays, and the
// next loss replaces it.
func (p *puller) replace(cause error) {
	if cause != nil {
		p.r.j.consumeError(cause)
	}
	fresh, err := p.r.openInbox(p.nc)
	if err != nil {
		return
	}
	p.in.retired.Store(true)
	_ = p.in.sub.Drain()
	p.retired = append(live(p.retired), p.in)
	p.in = fresh
}

// backOff holds requests back after a failure at from, longer each time.
func (p *puller) backOff(from time.Time) {
	p.retry = nextRetry(p.retry)
	p.notBefore = from.Add(p.retry)
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
