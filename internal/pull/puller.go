package pull

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/corral-go/corral/connection"
	"github.com/corral-go/corral/internal/jsapi"
	"github.com/corral-go/corral/internal/redeclare"
)

const (
	// expiry bounds each pull request; a request that brings nothing is
	// renewed, so an idle owner costs one request per expiry.
	expiry = 10 * time.Second
	// minExpiry is the shortest request worth sending: one that ends
	// sooner (Config.Until is near) is hardly answered before it does.
	minExpiry = 100 * time.Millisecond
	// heartbeat is the server's heartbeat on a waiting pull request: two
	// missed ones end it and a new one is sent, which is how a lost
	// request (server restart, leader change) is replaced.
	heartbeat = 2 * time.Second
	// retryMin and retryMax bound the wait before pulling again after a
	// pull failed, so a missing consumer or stream is not hammered.
	retryMin = 100 * time.Millisecond
	retryMax = 5 * time.Second
	// inFlightBytes bounds what the requests out ask for, at the size
	// messages are expected to have, so that no burst overruns the
	// server's buffer for the connection (max_pending, 64MiB by default,
	// shared by every handler on it): past that the server closes the
	// connection as a slow consumer, and what it held waits out its ack
	// wait. Four nats.go Consume calls of 500 64KiB messages each did. The
	// bound is in messages, not a request's max_bytes: a request the
	// server ends on its byte budget says so only when a message did not
	// fit, and a message larger than the budget would end every request.
	inFlightBytes = 8 << 20
)

// Owner is what a Puller pulls for.
type Owner interface {
	// Accept takes msg, which nc delivered and the puller counts as held;
	// it runs on the inbox's callback and must not block. It returns false
	// for a message it cannot take (one not from JetStream), which the
	// puller stops counting; otherwise the owner calls Release once done.
	Accept(nc *nats.Conn, msg *nats.Msg) bool
	// Refuse hands back msg, delivered beyond the owner's capacity, for
	// redelivery at once. It runs on the inbox's callback.
	Refuse(nc *nats.Conn, msg *nats.Msg)
	// Redeclare declares the consumer again after the server said it is
	// gone (deleted, or its stream with it). An error ends Run: the owner
	// is bound to a consumer it does not declare.
	Redeclare(ctx context.Context, js jetstream.JetStream) error
	// Failed reports a failure the puller recovers from by itself.
	Failed(err error)
	// Full is called while the owner holds all it can, with how long it
	// has; it returns how soon to be called again.
	Full(since time.Duration) time.Duration
}

// Config says what a Puller pulls and for how many.
type Config struct {
	Stream, Consumer string
	// Capacity is the most messages the owner holds at once.
	Capacity int
	// Floor, when set, makes the puller ask for less than Capacity and
	// adapt it to the owner's pace: it starts at Start and doubles, up to
	// Capacity, each time the owner held fewer than Floor (its workers)
	// although the server had delivered all that was asked; it halves,
	// down to Start, after the owner held all it asked for a second. 0:
	// it always asks for Capacity.
	Floor, Start int
	// MaxBytes, when set with Floor, stops the want growing past what
	// holds about MaxBytes at the size messages are expected to have (the
	// largest lately, see sizes), and brings it down to that when
	// messages grow; never below Floor+1.
	MaxBytes int64
	// Source tells the puller of reconnects, after which requests are
	// made again at once.
	Source connection.Source
	// Feed registers an inbox subscription with the pool it feeds, which
	// closes its queue only after the subscription's last callback; it
	// returns a channel closed then.
	Feed func(*nats.Subscription) <-chan struct{}
	// Peak, if set, records the most messages held at once, across the
	// pullers that count in it.
	Peak *atomic.Int64
	// Until, if set, says until when the owner may take messages (a task
	// worker's lease, which renewals extend): no request outlives it, and
	// none is sent once less than minExpiry is left. A process paused with
	// requests out (SIGSTOP, a frozen VM) keeps its connection, and the
	// server fills its requests until they expire: bounded so, they end
	// before what the owner holds is handed to others, and nothing handed
	// on is delivered to it.
	Until func() time.Time
	// Recovered, if set, is called when the consumer answers again after
	// the puller reported failures to its owner (Owner.Failed): they were
	// one episode, and it is over.
	Recovered func()
}

// Puller pulls for one owner, one connection at a time: Open, then Run.
type Puller struct {
	cfg     Config
	owner   Owner
	held    held
	want    *want
	sizes   sizes
	status  chan error // statuses of pull requests, newest kept
	subject string     // the consumer's next-message API subject
}

// New returns a puller for owner.
func New(cfg Config, owner Owner) *Puller {
	peak := cfg.Peak
	if peak == nil {
		peak = new(atomic.Int64)
	}
	return &Puller{cfg: cfg, owner: owner, held: held{capacity: cfg.Capacity, peak: peak, freed: make(chan struct{}, 1)},
		want: newWant(cfg), status: make(chan error, 1), subject: "$JS.API.CONSUMER.MSG.NEXT." + cfg.Stream + "." + cfg.Consumer}
}

// Release frees the room of a message the owner is done with.
func (p *Puller) Release() { p.held.release() }

// Held is the number of messages the owner holds now.
func (p *Puller) Held() int { return p.held.count() }

// Capacity is the most messages the owner holds at once.
func (p *Puller) Capacity() int { return p.held.capacity }

// Want is how many messages the puller asks the owner to hold now: the
// capacity, or less when it adapts (Config.Floor). The owner holds all
// it can once it holds this many.
func (p *Puller) Want() int { return p.want.get() }

// Open subscribes the first inbox on nc, so that Run can pull; it fails
// with jsapi.ErrConnGone when nc is closed.
func (p *Puller) Open(nc *nats.Conn) (*Session, error) {
	in, err := p.openInbox(nc)
	if err != nil {
		if errors.Is(err, nats.ErrConnectionClosed) {
			return nil, jsapi.ErrConnGone
		}
		return nil, err
	}
	return &Session{p: p, nc: nc, in: in, opened: time.Now()}, nil
}

// Session pulls on one connection.
type Session struct {
	p    *Puller
	nc   *nats.Conn
	js   jetstream.JetStream
	gone <-chan struct{} // the connection closed for good

	in      *inbox
	retired []*inbox // replaced inboxes still draining

	connChanged <-chan struct{} // closed when the connection's state changes
	reconnects  uint64

	looped      time.Time     // when Run last looked for silence; it wakes every heartbeat/2
	retry       time.Duration // the wait after the last failure
	notBefore   time.Time     // no request before
	fullSince   time.Time     // the owner has held all it can since
	redeclareAt time.Time     // declare the consumer again at
	timer       *time.Timer

	// opened is when the session began; answeredOnce says the consumer
	// has answered it; failedAt is the unix nanoseconds of the last
	// failure reported since the consumer last answered, 0 for none (see
	// outage.go).
	opened       time.Time
	answeredOnce bool
	failedAt     int64
}

// Run sends pull requests for the owner's free room until ctx ends, the
// connection is gone (jsapi.ErrConnGone) or the consumer fails for good.
// Then the owner calls Drain.
func (s *Session) Run(ctx context.Context, js jetstream.JetStream, gone <-chan struct{}) error {
	s.js, s.gone = js, gone
	st, changed := s.p.cfg.Source.Observe()
	s.connChanged, s.reconnects = changed, st.Stats.Reconnects
	s.timer = time.NewTimer(time.Hour)
	defer s.timer.Stop()
	for {
		now, err := s.redeclareIfDue(ctx, time.Now())
		if err != nil {
			return err
		}
		s.noteAnswers()
		s.replaceIfSilent(now)
		if err := s.request(now); err != nil {
			return err
		}
		s.timer.Reset(s.wait(now))
		if err := s.await(ctx); err != nil {
			return err
		}
	}
}

// Drain unsubscribes the session's inboxes, so that the server sends no
// more, and waits until what it sent already has reached the owner, or
// until by (zero: jsapi.Timeout from now).
func (s *Session) Drain(by time.Time) { s.p.drainInboxes(s.nc, append(s.retired, s.in), by) }

// redeclareIfDue declares the consumer again once its time has come; it
// returns the time after that.
func (s *Session) redeclareIfDue(ctx context.Context, now time.Time) (time.Time, error) {
	if s.redeclareAt.IsZero() || now.Before(s.redeclareAt) {
		return now, nil
	}
	s.redeclareAt = time.Time{}
	if err := s.p.owner.Redeclare(ctx, s.js); err != nil {
		return now, err
	}
	s.backOff(time.Now())
	return time.Now(), nil
}

// replaceIfSilent replaces the inbox when requests are out but nothing,
// not even a heartbeat, came for two heartbeats: the server lost them
// (restart, pause, leader change). A silence while this process did not
// run (it was paused, or starved of CPU) says nothing about the server:
// what the server sent meanwhile may not have been read yet, so the
// silence is counted from the process's return instead.
func (s *Session) replaceIfSilent(now time.Time) {
	stalled := !s.looped.IsZero() && now.Sub(s.looped) > heartbeat
	s.looped = now
	if stalled {
		s.in.heard.Store(now.UnixNano())
		return
	}
	if s.in.credits.Load() > 0 && now.Sub(time.Unix(0, s.in.heard.Load())) > 2*heartbeat {
		s.replace(jetstream.ErrNoHeartbeat)
	}
}

// request asks for the owner's free room, once enough is free; it fails
// only when the connection is gone.
func (s *Session) request(now time.Time) error {
	credits := s.in.credits.Load() // before held: see receive
	held := s.p.held.count()
	s.p.want.grow(held, s.in.delivered.Load(), s.p.sizes.expected())
	want := s.p.want.get()
	// What is owed stays within inFlightBytes at the expected size.
	limit := min(want, s.inFlight())
	free := min(want-held, limit) - int(credits)
	// Like nats.go's Consume, ask again once half the room is free:
	// asking for every freed slot would double the server's work.
	if free < max(1, limit/2) || now.Before(s.notBefore) || !s.nc.IsConnected() {
		return nil
	}
	expires := s.expiry(now)
	if expires < minExpiry {
		return nil
	}
	// The server wants two heartbeats within a request's expiry.
	req, _ := json.Marshal(pullRequest{Batch: free, Expires: expires, Heartbeat: min(heartbeat, expires/2)})
	s.in.credits.Add(int64(free))
	s.p.want.sent(free, s.in.delivered.Load())
	s.in.heard.Store(now.UnixNano()) // heartbeats are due from now
	if err := s.nc.PublishRequest(s.p.subject, s.in.subject, req); err != nil {
		s.in.dropCredits(int64(free))
		if errors.Is(err, nats.ErrConnectionClosed) {
			return jsapi.ErrConnGone
		}
		s.fail(err)
		s.backOff(now)
	}
	return nil
}

// expiry is how long a request sent now may wait: expiry, or less when
// Config.Until comes sooner.
func (s *Session) expiry(now time.Time) time.Duration {
	if s.p.cfg.Until == nil {
		return expiry
	}
	return min(expiry, s.p.cfg.Until().Sub(now))
}

// inFlight is how many messages the requests out may ask for: what fits
// inFlightBytes at the expected size, or, before the first message, at
// the largest the server takes; at least one.
func (s *Session) inFlight() int {
	size := s.p.sizes.expected()
	if size == 0 {
		size = s.nc.MaxPayload()
	}
	if size <= 0 {
		return math.MaxInt
	}
	return int(max(1, inFlightBytes/size))
}

// pullRequest is the body of a JetStream pull request.
type pullRequest struct {
	Batch     int           `json:"batch"`
	Expires   time.Duration `json:"expires"`
	Heartbeat time.Duration `json:"idle_heartbeat"`
}

// wait is how long the session may wait for something to happen.
func (s *Session) wait(now time.Time) time.Duration {
	wait := heartbeat / 2
	held := s.p.held.count()
	s.p.want.shrink(now, held)
	if held >= s.p.want.get() {
		if s.fullSince.IsZero() {
			s.fullSince = now
		}
		wait = min(wait, s.p.owner.Full(now.Sub(s.fullSince)))
	} else {
		s.fullSince = time.Time{}
	}
	if now.Before(s.notBefore) {
		wait = min(wait, s.notBefore.Sub(now))
	}
	return wait
}

// await waits for room, a status, a change of connection or the timer.
func (s *Session) await(ctx context.Context) error {
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-s.gone:
		return jsapi.ErrConnGone
	case <-s.p.held.freed:
	case <-s.timer.C:
	case <-s.connChanged:
		var st connection.Status
		st, s.connChanged = s.p.cfg.Source.Observe()
		if st.State == connection.StateConnected && st.Stats.Reconnects != s.reconnects {
			// Requests do not survive a reconnect: ask again now on a
			// fresh inbox rather than after missed heartbeats.
			s.reconnects = st.Stats.Reconnects
			s.replace(nil)
		}
	case err := <-s.p.status:
		return s.actOn(err)
	}
	return nil
}

// actOn acts on a pull request's status; it fails for a status the
// puller cannot recover from.
func (s *Session) actOn(status error) error {
	switch {
	case errors.Is(status, errRequestDone), errors.Is(status, jetstream.ErrServerShutdown):
		s.retry = 0
	case errors.Is(status, errRequestLost):
		s.replace(status)
	case errors.Is(status, jetstream.ErrBadRequest), errors.Is(status, ErrStatus):
		return fmt.Errorf("pull from consumer %s of stream %s: %w", s.p.cfg.Consumer, s.p.cfg.Stream, status)
	case errors.Is(status, nats.ErrNoResponders) && s.notYetReachable(time.Now()):
		s.replace(nil)
		s.backOff(time.Now())
	case errors.Is(status, jetstream.ErrConsumerDeleted), errors.Is(status, nats.ErrNoResponders):
		// The consumer, its stream or JetStream is gone or moving: declare
		// it again once a deletion has had time to finish.
		s.replace(status)
		if s.redeclareAt.IsZero() {
			s.redeclareAt = time.Now().Add(redeclare.After)
		}
		s.notBefore = s.redeclareAt
	default:
		s.fail(status)
		s.backOff(time.Now())
	}
	return nil
}

// replace moves requests to a fresh inbox, reporting cause if any; the
// old one drains. When no inbox can be opened, the old one stays, and the
// next loss replaces it.
func (s *Session) replace(cause error) {
	if cause != nil {
		s.fail(cause)
	}
	fresh, err := s.p.openInbox(s.nc)
	if err != nil {
		return
	}
	s.in.retired.Store(true)
	_ = s.in.sub.Drain()
	s.retired = append(live(s.retired), s.in)
	s.in = fresh
	s.p.want.replaced()
}

// backOff holds requests back after a failure at from, longer each time.
func (s *Session) backOff(from time.Time) {
	s.retry = nextRetry(s.retry)
	s.notBefore = from.Add(s.retry)
}

func nextRetry(d time.Duration) time.Duration {
	if d == 0 {
		return retryMin
	}
	return min(2*d, retryMax)
}
