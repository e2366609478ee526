package pull

import (
	"fmt"
	"time"

	"github.com/corral-go/corral/internal/redeclare"
)

// fail reports err, about l's consumer, to the owner: a failure the
// session recovers from by itself; the consumer answering later ends it
// (see noteAnswers). With several consumers, err names the consumer.
func (s *Session) fail(l *lane, err error) {
	if s.p.tiered() {
		err = fmt.Errorf("consumer %s: %w", l.t.name, err)
	}
	s.p.owner.Failed(err)
	l.failedAt = time.Now().UnixNano()
	if s.episodeAt == 0 {
		s.episodeAt = l.failedAt
	}
}

// noteAnswers tells the owner, through Config.Recovered, that the
// consumers answer again (a message, a heartbeat, the end of a request
// on the current inbox) after the failures reported since they last
// did: once every consumer that failed has answered since, and every one
// with a request out has answered since the first failure. Consumers
// lead by different servers fail at different times in one outage (a
// node lost): one that has not answered yet may be failing too, and the
// episode lasts until it has.
func (s *Session) noteAnswers() {
	failing, pending := false, false
	for _, l := range s.lanes {
		answered := l.in.answered.Load()
		if answered != 0 {
			l.answeredOnce = true
		}
		if l.failedAt != 0 && answered > l.failedAt {
			l.failedAt = 0
		}
		failing = failing || l.failedAt != 0
		pending = pending || l.in.credits.Load() > 0 && answered <= s.episodeAt
	}
	if s.episodeAt != 0 && !failing && !pending {
		s.episodeAt = 0
		if s.p.cfg.Recovered != nil {
			s.p.cfg.Recovered()
		}
	}
}

// notYetReachable reports whether no responders, now, says only that l's
// consumer is not reachable from this server yet: nothing has answered
// its requests in this session, which opened within redeclare.After. The
// leader of a consumer just declared subscribes to its requests before
// it answers the declaration, but that interest reaches the client's
// server by another route than the answer, and may come after it.
func (s *Session) notYetReachable(l *lane, now time.Time) bool {
	return !l.answeredOnce && now.Sub(s.opened) < redeclare.After
}
