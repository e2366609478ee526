package pull

import (
	"context"
	"errors"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/corral-go/corral/connection"
	"github.com/corral-go/corral/internal/jsapi"
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
	// partialAfter is how long free room less than half the owner's may
	// wait unasked for: long runs holding the rest would otherwise keep
	// it unused for as long as they run.
	partialAfter = 100 * time.Millisecond
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
	// gone (deleted, or its stream with it); with several, it declares
	// them all, leaving those still there as they are, while the session
	// goes on pulling from them. An error ends Run: the owner is bound to
	// a consumer it does not declare.
	Redeclare(ctx context.Context, js jetstream.JetStream) error
	// Failed reports a failure the puller recovers from by itself.
	Failed(err error)
	// Full is called while the owner holds all it can, with how long it
	// has; it returns how soon to be called again.
	Full(since time.Duration) time.Duration
}

// Config says what a Puller pulls and for how many.
type Config struct {
	// APIPrefix is the subject prefix of the JetStream API the consumers
	// are reached by, ending in '.'. Default "$JS.API.".
	APIPrefix string
	// Stream is the stream of the consumers.
	Stream string
	// Consumer is the consumer of Stream to pull from, unless Consumers
	// is set: the shorthand for Consumers of one, which callers of one
	// consumer keep.
	Consumer string
	// Consumers, when set, replaces Consumer: consumers of Stream pulled
	// in strict priority order, the first before the second, and so on
	// (see the package doc, Tiers). The owner never takes a message from
	// a consumer while one before it had messages when the owner asked
	// for more; so a consumer starves while those before it keep a
	// backlog. One entry pulls exactly as Consumer does.
	Consumers []string
	// Capacity is the most messages the owner holds at once.
	Capacity int
	// Floor, when set, makes the puller ask for less than Capacity and
	// adapt it to the owner's pace: it starts at Start and doubles, up to
	// Capacity, each time the owner held fewer than Floor (its workers)
	// although the server had delivered all that was asked; it halves,
	// down to Start, after the owner held all it asked for a second. 0:
	// it always asks for Capacity.
	Floor, Start int
	// Want, if set, says how many messages the owner wants to hold now,
	// at least one and at most Capacity, in place of Floor's adapting: an
	// owner that knows its pace better (a task worker taking tasks ahead
	// of its slots only while they end quickly) decides. It is asked
	// before each request and each wait, and must be cheap.
	Want func() int
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
	// none is sent once less than minExpiry is left. A process paused
	// with requests out (SIGSTOP, a frozen VM) keeps its connection, and
	// the server fills its requests until they expire: bounded so, they
	// end before what the owner holds is handed to others, and nothing
	// handed on is delivered to it. A probe of several consumers carries
	// no expiry: the server answers it at once, unless the consumer is at
	// its max_ack_pending, which consumers pulled in tiers should not
	// limit.
	Until func() time.Time
	// Recovered, if set, is called when the consumers answer again after
	// the puller reported failures to its owner (Owner.Failed): they were
	// one episode, and it is over once every consumer that failed has
	// answered since.
	Recovered func()
}

// consumers is the consumers to pull from, in order.
func (c *Config) consumers() []string {
	if len(c.Consumers) > 0 {
		return c.Consumers
	}
	return []string{c.Consumer}
}

// Puller pulls for one owner, one connection at a time: Open, then Run.
type Puller struct {
	cfg     Config
	owner   Owner
	held    held
	want    *want
	sizes   sizes
	targets []target
	// status is the first consumer's statuses (targets[0].status), on
	// which a session waits.
	status chan error
	// noted, with several consumers, says that a request ended or a
	// status came for one: the session looks at what to ask next. Nil
	// with one consumer, whose requests overlap (see request).
	noted chan struct{}
	// reprobe is how often an idle session of several consumers probes
	// those that have no doorbell out: reprobeEvery.
	reprobe time.Duration
}

// target is a consumer the puller pulls from.
type target struct {
	name    string
	subject string     // its next-message API subject
	status  chan error // statuses of its requests, newest kept
}

// New returns a puller for owner.
func New(cfg Config, owner Owner) *Puller {
	peak := cfg.Peak
	if peak == nil {
		peak = new(atomic.Int64)
	}
	p := &Puller{cfg: cfg, owner: owner, held: held{capacity: cfg.Capacity, peak: peak, freed: make(chan struct{}, 1)},
		want: newWant(cfg), reprobe: reprobeEvery}
	api := cfg.APIPrefix
	if api == "" {
		api = "$JS.API."
	}
	for _, name := range cfg.consumers() {
		p.targets = append(p.targets, target{name: name, subject: api + "CONSUMER.MSG.NEXT." + cfg.Stream + "." + name,
			status: make(chan error, 1)})
	}
	p.status = p.targets[0].status
	if len(p.targets) > 1 {
		p.noted = make(chan struct{}, 1)
	}
	return p
}

// tiered reports whether the puller pulls from several consumers.
func (p *Puller) tiered() bool { return p.noted != nil }

// Release frees the room of a message the owner is done with.
func (p *Puller) Release() { p.held.release() }

// Held is the number of messages the owner holds now.
func (p *Puller) Held() int { return p.held.count() }

// Capacity is the most messages the owner holds at once.
func (p *Puller) Capacity() int { return p.held.capacity }

// Want is how many messages the puller asks the owner to hold now: what
// Config.Want says, the capacity, or less when it adapts (Config.Floor).
// The owner holds all it can once it holds this many.
func (p *Puller) Want() int { return p.want.get() }

// Open subscribes an inbox per consumer on nc, so that Run can pull; it
// fails with jsapi.ErrConnGone when nc is closed.
func (p *Puller) Open(nc *nats.Conn) (*Session, error) {
	s := &Session{p: p, nc: nc, opened: time.Now()}
	for i := range p.targets {
		in, err := p.openInboxOf(nc, i)
		if err != nil {
			for _, l := range s.lanes {
				_ = l.in.sub.Unsubscribe()
			}
			if errors.Is(err, nats.ErrConnectionClosed) {
				return nil, jsapi.ErrConnGone
			}
			return nil, err
		}
		s.lanes = append(s.lanes, &lane{at: i, t: &p.targets[i], in: in})
	}
	s.lane = s.lanes[0]
	return s, nil
}

// Session pulls on one connection.
type Session struct {
	p    *Puller
	nc   *nats.Conn
	js   jetstream.JetStream
	gone <-chan struct{} // the connection closed for good

	// lane is the first consumer's (embedded: with one consumer, the
	// session's); lanes are all of them, in priority order.
	*lane
	lanes []*lane
	tiers tiers // with several consumers: where the asking is

	connChanged <-chan struct{} // closed when the connection's state changes
	reconnects  uint64

	looped    time.Time // when Run last looked for silence; it wakes every heartbeat/2
	fullSince time.Time // the owner has held all it can since
	partSince time.Time // room less than half the owner's has been free, unasked, since
	episodeAt int64     // unix nanoseconds of the first failure of the episode under way, 0 for none
	timer     *time.Timer

	opened time.Time // when the session began
}

// Run sends pull requests for the owner's free room until ctx ends, the
// connection is gone (jsapi.ErrConnGone) or a consumer fails for good.
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
		if s.p.tiered() {
			err = s.requestTiered(now)
		} else {
			err = s.request(now)
		}
		if err != nil {
			return err
		}
		s.timer.Reset(s.wait(now))
		if err := s.await(ctx); err != nil {
			return err
		}
	}
}

// reconnected starts the session afresh on a new connection (a server
// restart, a failover). Requests do not survive a reconnect: they are
// made again now on fresh inboxes, rather than after missed heartbeats,
// and the back-off of failures on the old connection (up to retryMax,
// after an outage) no longer holds them back. A consumer waiting to be
// declared again still waits.
func (s *Session) reconnected() {
	for _, l := range s.lanes {
		s.replace(l, nil)
		if l.redeclareAt.IsZero() {
			l.retry, l.notBefore = 0, time.Time{}
		}
	}
	s.tiers = tiers{}
}

// Drain unsubscribes the session's inboxes, so that the server sends no
// more, and waits until what it sent already has reached the owner, or
// until by (zero: jsapi.Timeout from now).
func (s *Session) Drain(by time.Time) {
	var inboxes []*inbox
	for _, l := range s.lanes {
		inboxes = append(append(inboxes, l.retired...), l.in)
	}
	s.p.drainInboxes(s.nc, inboxes, by)
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
	for _, l := range s.lanes {
		if now.Before(l.notBefore) {
			wait = min(wait, l.notBefore.Sub(now))
		}
	}
	if due := s.partSince.Add(partialAfter); !s.partSince.IsZero() && now.Before(due) {
		wait = min(wait, due.Sub(now))
	}
	if s.tiers.idle && now.Before(s.tiers.reprobeAt) {
		wait = min(wait, s.tiers.reprobeAt.Sub(now))
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
			s.reconnects = st.Stats.Reconnects
			s.reconnected()
		}
	case err := <-s.p.status:
		return s.actOn(s.lanes[0], err)
	case <-s.p.noted:
		for _, l := range s.lanes[1:] {
			select {
			case err := <-l.t.status:
				if err := s.actOn(l, err); err != nil {
					return err
				}
			default:
			}
		}
	}
	return nil
}
