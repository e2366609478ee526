package consumer

import "github.com/nats-io/nats.go"

// Msg is one message handed to a handler. It wraps the *nats.Msg, which
// Raw returns. A Msg belongs to the handler call it is passed to.
type Msg struct {
	raw     *nats.Msg
	handler string
}

// Subject is the subject the message was published to.
func (m *Msg) Subject() string { return m.raw.Subject }

// Data is the payload.
func (m *Msg) Data() []byte { return m.raw.Data }

// Header is the message's headers (nil when it has none).
func (m *Msg) Header() nats.Header { return m.raw.Header }

// Reply is the subject a reply goes to; empty when no reply is expected.
func (m *Msg) Reply() string { return m.raw.Reply }

// Handler names the handler the message was delivered to.
func (m *Msg) Handler() string { return m.handler }

// Raw is the nats.go message, for everything else it offers.
func (m *Msg) Raw() *nats.Msg { return m.raw }
