package connection

import "github.com/nats-io/nats.go"

// Current returns, without waiting, the connection in use while it is
// connected or nats.go is reconnecting it (StateConnected,
// StateReconnecting), and nil otherwise: before it first connects, while
// the supervisor drains it, and once it has closed for good until its
// replacement connects. Unlike Conn, it hands out a reconnecting
// connection, so that a caller can publish into nats.go's reconnect
// buffer, or fail at once instead of waiting. gone is closed once nc has
// closed for good (nil with nc); changed is closed at the supervisor's
// next change of status, when a caller that got nil may ask again.
func (s *Supervisor) Current() (nc *nats.Conn, gone, changed <-chan struct{}) {
	s.mu.Lock()
	defer s.mu.Unlock()
	l := s.cur
	if l == nil || l.nc == nil || (s.status.State != StateConnected && s.status.State != StateReconnecting) {
		return nil, nil, s.changed
	}
	return l.nc, l.closed, s.changed
}
