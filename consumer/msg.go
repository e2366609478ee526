package consumer

import (
	"sync"
	"sync/atomic"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// Msg is one message handed to a handler, core NATS or JetStream. Raw is
// the nats.go message in both cases. A Msg belongs to the handler call it
// is passed to; its ack methods (see [Msg.Ack]) are for JetStream
// messages.
type Msg struct {
	raw     *nats.Msg
	handler string
	js      *jsState // JetStream messages only
}

// jsState is what a JetStream message carries beside its nats.go message:
// a core message is handed over without it, in half the bytes.
type jsState struct {
	nc      *nats.Conn // acks go back on the connection it came from
	md      jetstream.MsgMetadata
	mu      sync.Mutex // orders acks: no in-progress ack after a settle
	settled bool       // acked, naked or terminated
	// alive is when the server last heard the message is being worked on
	// (unix nanoseconds): when it arrived, or the last in-progress ack.
	alive atomic.Int64
	// prev and next link the message in its run's held list (held.go).
	prev, next *Msg
}

// Subject is the subject the message was published to.
func (m *Msg) Subject() string { return m.raw.Subject }

// Data is the payload.
func (m *Msg) Data() []byte { return m.raw.Data }

// Header is the message's headers (nil when it has none).
func (m *Msg) Header() nats.Header { return m.raw.Header }

// Reply is the subject a reply goes to; empty when no reply is expected.
// For JetStream messages it is the ack subject.
func (m *Msg) Reply() string { return m.raw.Reply }

// Handler names the handler the message was delivered to.
func (m *Msg) Handler() string { return m.handler }

// Raw is the nats.go message, for everything else it offers.
func (m *Msg) Raw() *nats.Msg { return m.raw }

// Metadata is a JetStream message's stream and consumer sequences,
// delivery count, timestamp and pending count; nil for core messages.
func (m *Msg) Metadata() *jetstream.MsgMetadata {
	if m.js == nil {
		return nil
	}
	return &m.js.md
}

// jsMsg is a JetStream message and its state in one allocation: its
// Msg's js points at st.
type jsMsg struct {
	Msg
	st jsState
}

// newJSMsg is raw, received on nc for handler, with the metadata its ack
// subject gives; it fails for a message not from JetStream.
func newJSMsg(nc *nats.Conn, raw *nats.Msg, handler string) (*Msg, error) {
	w := &jsMsg{Msg: Msg{raw: raw, handler: handler}, st: jsState{nc: nc}}
	if err := parseAckSubject(raw.Reply, &w.st.md); err != nil {
		return nil, err
	}
	w.js = &w.st
	return &w.Msg, nil
}
