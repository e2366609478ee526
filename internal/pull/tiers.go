package pull

import (
	"encoding/json"
	"time"
)

// Pulling from several consumers in strict order (Config.Consumers).
//
// Each consumer's inbox has at most one request out at a time, so that
// its credits going to zero says the request is over (a no_wait
// request's 404 carries no count of what it did not deliver). A round
// asks the consumers top down: a probe (a no_wait request for the free
// room) to each not known empty, the next only once the one before
// answered short. A probe that the consumer filled says it may have
// more: the round ends there, and doorbells below it are withdrawn. A
// round that finds every consumer empty leaves the session idle, with a
// doorbell (a long-poll request of batch 1) out on each consumer, top
// down, as far as the room goes. A doorbell out stands for its consumer
// in a round: a message there comes through it.

// asked is what a lane has out on its current inbox.
type asked struct {
	kind      asking
	batch     int   // what it asked for
	delivered int64 // the inbox's deliveries when it asked
	empty     bool  // its last probe this round answered short
}

type asking uint8

const (
	askedNothing asking = iota
	askedProbe
	askedDoorbell
)

// tiers is where a session pulling from several consumers is.
type tiers struct {
	round bool // a round is on: the lanes are asked top down
	idle  bool // the last round found every consumer empty
	rang  bool // a doorbell brought a message since the last round began
}

// requestTiered asks the consumers for the owner's free room, in order;
// it fails only when the connection is gone.
func (s *Session) requestTiered(now time.Time) error {
	s.settle()
	var owed int64
	for _, l := range s.lanes {
		owed += l.in.credits.Load() // before held: see receive
	}
	free, limit := s.room(owed, s.delivered())
	if !s.tiers.round && (free >= max(1, limit/2) || s.tiers.rang || s.tiers.idle && free >= 1 && s.unwatched(now)) {
		// A round begins when half the room is free, as with one
		// consumer, when a doorbell rang (for the rest of the room), or
		// when idle with room and a consumer nothing watches.
		s.tiers = tiers{round: true}
		for _, l := range s.lanes {
			l.asked.empty = false
		}
	}
	if !s.tiers.round || !s.nc.IsConnected() {
		return nil
	}
	return s.pass(now, free)
}

// settle takes the requests that are over into account: a probe
// answered short found its consumer empty, a doorbell that delivered
// rang.
func (s *Session) settle() {
	for _, l := range s.lanes {
		a := &l.asked
		if a.kind == askedNothing || l.in.credits.Load() > 0 {
			continue
		}
		got := l.in.delivered.Load() - a.delivered
		switch a.kind {
		case askedProbe:
			a.empty = got < int64(a.batch)
		case askedDoorbell:
			s.tiers.rang = s.tiers.rang || got > 0
		}
		a.kind = askedNothing
	}
}

// unwatched reports whether a consumer that may be asked has nothing
// out: idle, its messages would wait for a round.
func (s *Session) unwatched(now time.Time) bool {
	for _, l := range s.lanes {
		if l.asked.kind == askedNothing && l.available(now) {
			return true
		}
	}
	return false
}

// pass carries the round on, top down, with free room: it probes the
// first consumer neither watched nor known empty, or waits for its probe;
// past the last, the session is idle and rings doorbells. A consumer
// that cannot be asked now (failing, to be declared again) is passed
// over.
func (s *Session) pass(now time.Time, free int) error {
	for i, l := range s.lanes {
		switch {
		case l.asked.kind == askedDoorbell, l.asked.empty, !l.available(now):
			continue
		case l.asked.kind == askedProbe:
			return nil // its answer decides
		case free < 1:
			// l may have messages and there is no room: the round ends
			// here, and no doorbell below l may take ahead of it.
			s.tiers.round = false
			if s.withdraw(i + 1) {
				s.p.note() // their room is free: look again at once
			}
			return nil
		}
		_, err := s.ask(now, l, askedProbe, free)
		return err
	}
	s.tiers.round, s.tiers.idle = false, true
	for _, l := range s.lanes {
		if free < 1 {
			break
		}
		if l.asked.kind != askedNothing || !l.available(now) {
			continue
		}
		sent, err := s.ask(now, l, askedDoorbell, 1)
		if err != nil {
			return err
		}
		if sent {
			free--
		}
	}
	return nil
}

// ask sends l's consumer a probe for batch messages, or a doorbell, and
// reports whether it went out: none does once less than minExpiry is
// left before Config.Until. A probe carries no expiry, for the server to
// answer at once (one with an expiry waits for a first message); it can
// wait only on a consumer at its max_ack_pending, which consumers pulled
// in tiers should not set. A doorbell expires as a request to one
// consumer does, with heartbeats.
func (s *Session) ask(now time.Time, l *lane, kind asking, batch int) (bool, error) {
	expires := s.expiry(now)
	if expires < minExpiry {
		return false, nil
	}
	req := pullRequest{Batch: batch, NoWait: true}
	if kind == askedDoorbell {
		req = pullRequest{Batch: 1, Expires: expires, Heartbeat: min(heartbeat, expires/2)}
	}
	body, _ := json.Marshal(req)
	delivered := l.in.delivered.Load()
	sent, err := s.send(now, l, body, req.Batch)
	if sent {
		l.asked = asked{kind: kind, batch: req.Batch, delivered: delivered}
	}
	return sent, err
}

// withdraw takes back the doorbells out on lanes[from:], replacing their
// inboxes, and reports whether there were any: a consumer above them may
// have messages, which must come first.
func (s *Session) withdraw(from int) bool {
	withdrawn := false
	for _, l := range s.lanes[from:] {
		if l.asked.kind == askedDoorbell {
			s.replace(l, nil)
			withdrawn = withdrawn || l.asked.kind == askedNothing // else no inbox could be opened
		}
	}
	return withdrawn
}
