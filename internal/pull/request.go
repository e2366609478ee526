package pull

import (
	"encoding/json"
	"errors"
	"math"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/corral-go/corral/internal/jsapi"
)

// request asks the one consumer for the owner's free room, once enough is
// free; it fails only when the connection is gone. Several consumers are
// asked by requestTiered instead.
func (s *Session) request(now time.Time) error {
	l := s.lanes[0]
	credits := l.in.credits.Load() // before held: see receive
	free, limit := s.room(credits, l.in.delivered.Load())
	if !s.enough(now, free, limit) || now.Before(l.notBefore) || !s.nc.IsConnected() {
		return nil
	}
	expires := s.expiry(now)
	if expires < minExpiry {
		return nil
	}
	// The server wants two heartbeats within a request's expiry.
	req, _ := json.Marshal(pullRequest{Batch: free, Expires: expires, Heartbeat: min(heartbeat, expires/2)})
	_, err := s.send(now, l, req, free)
	return err
}

// enough reports whether free room, of the most that may be asked for
// (limit), is worth asking for now. Like nats.go's Consume, a session
// asks once half the room is free: asking for every freed slot would
// double the server's work. Less waits at most partialAfter.
func (s *Session) enough(now time.Time, free, limit int) bool {
	switch {
	case free >= max(1, limit/2):
		return true
	case free < 1:
		s.partSince = time.Time{}
		return false
	case s.partSince.IsZero():
		s.partSince = now
	}
	return now.Sub(s.partSince) >= partialAfter
}

// room is the owner's free room, with credits owed by the requests out
// and delivered the messages their inboxes received, and the most the
// requests out may ask for (limit).
func (s *Session) room(credits, delivered int64) (free, limit int) {
	held := s.p.held.count()
	s.p.want.grow(held, delivered, s.p.sizes.expected())
	want := s.p.want.get()
	// What is owed stays within inFlightBytes at the expected size.
	limit = min(want, s.inFlight())
	return min(want-held, limit) - int(credits), limit
}

// send publishes req, a request for batch messages, to l's consumer on
// its inbox, counting batch as its credit, and reports whether it went
// out. It fails only when the connection is gone; after another failure
// it holds l back.
func (s *Session) send(now time.Time, l *lane, req []byte, batch int) (bool, error) {
	l.in.credits.Add(int64(batch))
	s.p.want.sent(batch, s.delivered())
	s.partSince = time.Time{}
	l.in.heard.Store(now.UnixNano()) // heartbeats are due from now
	if err := s.nc.PublishRequest(l.t.subject, l.in.subject, req); err != nil {
		l.in.dropCredits(int64(batch))
		if errors.Is(err, nats.ErrConnectionClosed) {
			return false, jsapi.ErrConnGone
		}
		s.fail(l, err)
		l.backOff(now)
		return false, nil
	}
	return true, nil
}

// delivered is what the current inboxes received.
func (s *Session) delivered() int64 {
	var n int64
	for _, l := range s.lanes {
		n += l.in.delivered.Load()
	}
	return n
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
	// NoWait asks for what the consumer has now: without an expiry, the
	// server answers at once, with up to Batch messages and, short of
	// Batch, a 404 "No Messages".
	NoWait bool `json:"no_wait,omitempty"`
}
