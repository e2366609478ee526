package publisher

import (
	"fmt"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// session is one connection's JetStream context, as the send loop uses it
// from the connect to the connection's replacement. nats.go's callbacks
// carry the session they belong to, and an entry in flight the session it
// was sent on: a late callback about a send on an old connection must not
// settle a message sent again on a new one.
type session struct {
	nc   *nats.Conn
	js   jetstream.JetStream
	gone <-chan struct{} // closed when nc is replaced
}

// newSession makes the JetStream context of nc, whose ack and error
// callbacks settle what was sent through it.
func (p *Buffered) newSession(nc *nats.Conn, gone <-chan struct{}) (*session, error) {
	sess := &session{nc: nc, gone: gone}
	js, err := p.cfg.JetStreamAPI.New(nc,
		jetstream.WithPublishAsyncAckHandler(func(js jetstream.JetStream, m *nats.Msg, ack *jetstream.PubAck) {
			p.handleAck(sess, m, ack)
		}),
		jetstream.WithPublishAsyncErrHandler(func(js jetstream.JetStream, m *nats.Msg, err error) {
			p.handleError(sess, m, err)
		}),
		jetstream.WithPublishAsyncTimeout(p.cfg.AckTimeout),
		// Our window bounds what is in flight; nats.go's must never stall.
		jetstream.WithPublishAsyncMaxPending(2*p.cfg.MaxInFlight+1),
	)
	if err != nil {
		return nil, fmt.Errorf("publisher: jetstream: %w", err)
	}
	sess.js = js
	return sess, nil
}
