package pull

import (
	"time"

	"github.com/corral-go/corral/internal/redeclare"
)

// fail reports err to the owner, a failure the session recovers from by
// itself; the consumer answering later ends it (see noteAnswers).
func (s *Session) fail(err error) {
	s.p.owner.Failed(err)
	s.failedAt = time.Now().UnixNano()
}

// noteAnswers tells the owner, through Config.Recovered, that the
// consumer answers again (a message, a heartbeat, the end of a request
// on the current inbox) after the failures reported since it last did.
func (s *Session) noteAnswers() {
	answered := s.in.answered.Load()
	if answered == 0 {
		return
	}
	s.answeredOnce = true
	if s.failedAt == 0 || answered <= s.failedAt {
		return
	}
	s.failedAt = 0
	if s.p.cfg.Recovered != nil {
		s.p.cfg.Recovered()
	}
}

// notYetReachable reports whether no responders, now, says only that the
// consumer is not reachable from this server yet: nothing has answered
// in this session, which opened within redeclare.After. The leader of a
// consumer just declared subscribes to its requests before it answers
// the declaration, but that interest reaches the client's server by
// another route than the answer, and may come after it.
func (s *Session) notYetReachable(now time.Time) bool {
	return !s.answeredOnce && now.Sub(s.opened) < redeclare.After
}
