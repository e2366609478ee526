package pull

import (
	"encoding/json"
	"time"
)

// Pulling from several consumers in strict order (Config.Consumers).
//
// Each consumer's inbox has at most one request out at a time, so that
// its credits going to zero says the request is over (a no_wait
// request's 404 carries no count of what it did not deliver).
//
// A round asks the consumers top down: a probe (a no_wait request for
// the free room) to each not known empty, the next only once the one
// before answered short. A probe the consumer filled says it may have
// more: the round ends there when no room is left, and doorbells below
// it are withdrawn. A round that finds every consumer empty leaves the
// session idle, with a doorbell (a waiting request of batch 1) out on
// each consumer, top down, as far as the room goes; a doorbell that
// expires is renewed. A doorbell out stands for its consumer in a round:
// a message there comes through it.
//
// Probes ask for the room neither held nor asked for by other probes:
// what doorbells owe is room the owner does not hold, and a doorbell
// that rings when a probe has filled it brings a message that goes back
// (Owner.Refuse). Without that, doorbells that take all the room would
// leave the consumers below them unasked; with it, an idle session asks
// those once a second (reprobeEvery).

// reprobeEvery is how often an idle session probes the consumers that
// have no doorbell out: the room did not reach them (Puller.reprobe).
const reprobeEvery = heartbeat / 2

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
	round     bool      // a round is on: the lanes are asked top down
	idle      bool      // the last round found every consumer empty
	rang      bool      // a doorbell brought a message since the last round began
	reprobeAt time.Time // when idle, probe the consumers with no doorbell at
}

// requestTiered asks the consumers for the owner's free room, in order;
// it fails only when the connection is gone.
func (s *Session) requestTiered(now time.Time) error {
	s.settle()
	var probed, rung int64
	for _, l := range s.lanes {
		credits := l.in.credits.Load() // before held: see receive
		if l.asked.kind == askedDoorbell {
			rung += credits
		} else {
			probed += credits
		}
	}
	free, limit := s.room(probed, s.delivered())
	if !s.nc.IsConnected() {
		return nil
	}
	t := &s.tiers
	if !t.round {
		switch {
		case t.rang, !t.idle && s.enough(now, free, limit):
			// A doorbell rang (ask for the rest of the room) or, busy,
			// enough of the room is free, as with one consumer.
		case t.idle && free >= 1 && !now.Before(t.reprobeAt) && s.unwatched(now):
		case t.idle:
			return s.ring(now, free-int(rung))
		default:
			return nil
		}
		*t = tiers{round: true}
		for _, l := range s.lanes {
			l.asked.empty = false
		}
	}
	return s.pass(now, free, free-int(rung))
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
// out: idle, its messages wait for a probe.
func (s *Session) unwatched(now time.Time) bool {
	for _, l := range s.lanes {
		if l.asked.kind == askedNothing && l.available(now) {
			return true
		}
	}
	return false
}

// pass carries the round on, top down: it probes the first consumer
// neither watched nor known empty for free, or waits for its probe; past
// the last, the session is idle and rings doorbells with spare, the room
// the doorbells out leave. A consumer that cannot be asked now (failing,
// to be declared again) is passed over.
func (s *Session) pass(now time.Time, free, spare int) error {
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
	s.tiers = tiers{idle: true, reprobeAt: now.Add(s.p.reprobe)}
	return s.ring(now, spare)
}

// ring leaves a doorbell with each consumer that has nothing out, top
// down, while spare room is left.
func (s *Session) ring(now time.Time, spare int) error {
	for _, l := range s.lanes {
		if spare < 1 {
			return nil
		}
		if l.asked.kind != askedNothing || !l.available(now) {
			continue
		}
		sent, err := s.ask(now, l, askedDoorbell, 1)
		if err != nil || !sent {
			return err
		}
		spare--
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
