package pull

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/corral-go/corral/internal/redeclare"
)

// lane is a session's pulling from one consumer: its inbox, the inboxes
// it replaced, its failures, and, with several consumers, the request it
// has out (see tiers.go).
type lane struct {
	at      int     // the consumer's place in Config.Consumers: 0 comes first
	t       *target // the consumer
	in      *inbox
	retired []*inbox // replaced inboxes still draining

	retry       time.Duration // the wait after the last failure
	notBefore   time.Time     // no request before
	redeclareAt time.Time     // declare the consumers again at

	// answeredOnce says the consumer has answered this session; failedAt
	// is the unix nanoseconds of the last failure reported since it last
	// answered, 0 for none (see outage.go).
	answeredOnce bool
	failedAt     int64

	asked asked // the request out on in, with several consumers
}

// available reports whether l's consumer may be asked now: it is not
// held back after a failure, nor waiting to be declared again.
func (l *lane) available(now time.Time) bool { return !now.Before(l.notBefore) }

// backOff holds requests back after a failure at from, longer each time.
func (l *lane) backOff(from time.Time) {
	l.retry = nextRetry(l.retry)
	l.notBefore = from.Add(l.retry)
}

func nextRetry(d time.Duration) time.Duration {
	if d == 0 {
		return retryMin
	}
	return min(2*d, retryMax)
}

// redeclareIfDue declares the consumers again once the time has come for
// one that went missing; it returns the time after that. The owner
// declares all of them, which leaves those still there as they are.
func (s *Session) redeclareIfDue(ctx context.Context, now time.Time) (time.Time, error) {
	due := false
	for _, l := range s.lanes {
		if !l.redeclareAt.IsZero() && !now.Before(l.redeclareAt) {
			due = true
		}
	}
	if !due {
		return now, nil
	}
	if err := s.p.owner.Redeclare(ctx, s.js); err != nil {
		return now, err
	}
	for _, l := range s.lanes {
		if !l.redeclareAt.IsZero() && !now.Before(l.redeclareAt) {
			l.redeclareAt = time.Time{}
			l.backOff(time.Now())
		}
	}
	return time.Now(), nil
}

// replaceIfSilent replaces a consumer's inbox when requests are out but
// nothing, not even a heartbeat, came for two heartbeats: the server lost
// them (restart, pause, leader change). A silence while this process did
// not run (it was paused, or starved of CPU) says nothing about the
// server: what the server sent meanwhile may not have been read yet, so
// the silence is counted from the process's return instead.
func (s *Session) replaceIfSilent(now time.Time) {
	stalled := !s.looped.IsZero() && now.Sub(s.looped) > heartbeat
	s.looped = now
	for _, l := range s.lanes {
		if stalled {
			l.in.heard.Store(now.UnixNano())
			continue
		}
		if l.in.credits.Load() > 0 && now.Sub(time.Unix(0, l.in.heard.Load())) > 2*heartbeat {
			s.replace(l, jetstream.ErrNoHeartbeat)
		}
	}
}

// actOn acts on the status of a request to l's consumer; it fails for a
// status the puller cannot recover from.
func (s *Session) actOn(l *lane, status error) error {
	switch {
	case errors.Is(status, errRequestDone), errors.Is(status, jetstream.ErrServerShutdown):
		l.retry = 0
	case errors.Is(status, errRequestLost):
		s.replace(l, status)
	case errors.Is(status, jetstream.ErrBadRequest), errors.Is(status, ErrStatus):
		return fmt.Errorf("pull from consumer %s of stream %s: %w", l.t.name, s.p.cfg.Stream, status)
	case errors.Is(status, nats.ErrNoResponders) && s.notYetReachable(l, time.Now()):
		s.replace(l, nil)
		l.backOff(time.Now())
	case errors.Is(status, jetstream.ErrConsumerDeleted), errors.Is(status, nats.ErrNoResponders):
		// The consumer, its stream or JetStream is gone or moving: declare
		// it again once a deletion has had time to finish.
		s.replace(l, status)
		if l.redeclareAt.IsZero() {
			l.redeclareAt = time.Now().Add(redeclare.After)
		}
		l.notBefore = l.redeclareAt
	default:
		s.fail(l, status)
		l.backOff(time.Now())
	}
	return nil
}

// replace moves l's requests to a fresh inbox, reporting cause if any;
// the old one drains. When no inbox can be opened, the old one stays, and
// the next loss replaces it.
func (s *Session) replace(l *lane, cause error) {
	if cause != nil {
		s.fail(l, cause)
	}
	fresh, err := s.p.openInboxOf(s.nc, l.at)
	if err != nil {
		return
	}
	l.in.retired.Store(true)
	_ = l.in.sub.Drain()
	l.retired = append(live(l.retired), l.in)
	l.in = fresh
	l.asked = asked{}
	s.p.want.replaced()
}
