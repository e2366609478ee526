package consumer

import (
	"context"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// Msg is one message handed to a handler, core NATS or JetStream. Raw is
// the nats.go message in both cases. A Msg belongs to the handler call it
// is passed to.
type Msg struct {
	raw     *nats.Msg
	handler string

	// JetStream messages only.
	nc      *nats.Conn // acks go back on the connection it came from
	meta    *jetstream.MsgMetadata
	mu      sync.Mutex // orders acks: no in-progress ack after a settle
	settled bool       // acked, naked or terminated
	alive   atomic.Int64
	// alive is when the server last heard the message is being worked on
	// (unix nanoseconds): when it arrived, or the last in-progress ack.
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
func (m *Msg) Metadata() *jetstream.MsgMetadata { return m.meta }

// Ack acknowledges the message now, instead of when the handler returns;
// the handler's result then no longer settles it.
func (m *Msg) Ack() error { return m.settle(ackBody) }

// DoubleAck acknowledges the message and waits for the server to confirm
// it, so that it is not redelivered for want of the ack.
func (m *Msg) DoubleAck(ctx context.Context) error {
	if m.meta == nil {
		return ErrNotJetStream
	}
	m.mu.Lock()
	if m.settled {
		m.mu.Unlock()
		return ErrSettled
	}
	m.settled = true
	// Not held over the round trip: settled already refuses in-progress
	// acks, and the keeper must not wait on a slow confirmation.
	m.mu.Unlock()
	_, err := m.nc.RequestWithContext(ctx, m.raw.Reply, ackBody)
	return err
}

// Nak asks for redelivery after delay (0: at once).
func (m *Msg) Nak(delay time.Duration) error {
	if delay <= 0 {
		return m.settle(nakBody)
	}
	return m.settle([]byte(`-NAK {"delay": ` + strconv.FormatInt(delay.Nanoseconds(), 10) + `}`))
}

// Term tells the server never to redeliver the message, with a reason.
func (m *Msg) Term(reason string) error {
	if reason == "" {
		return m.settle(termBody)
	}
	return m.settle(append(append([]byte(nil), termBody...), " "+reason...))
}

// InProgress resets the server's ack-wait clock for the message. The pool
// does this by itself for handlers that run long.
func (m *Msg) InProgress() error {
	if m.meta == nil {
		return ErrNotJetStream
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.settled {
		return ErrSettled
	}
	m.alive.Store(time.Now().UnixNano())
	return m.nc.Publish(m.raw.Reply, progressBody)
}

var (
	ackBody      = []byte("+ACK")
	nakBody      = []byte("-NAK")
	termBody     = []byte("+TERM")
	progressBody = []byte("+WPI")
)

func (m *Msg) settle(body []byte) error {
	if m.meta == nil {
		return ErrNotJetStream
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.settled {
		return ErrSettled
	}
	m.settled = true
	return m.nc.Publish(m.raw.Reply, body)
}

func (m *Msg) isSettled() bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.settled
}

// metadata reads a JetStream message's ack subject.
func metadata(raw *nats.Msg) (*jetstream.MsgMetadata, error) {
	md, err := raw.Metadata()
	if err != nil {
		return nil, err
	}
	return &jetstream.MsgMetadata{
		Sequence:     jetstream.SequencePair{Consumer: md.Sequence.Consumer, Stream: md.Sequence.Stream},
		NumDelivered: md.NumDelivered,
		NumPending:   md.NumPending,
		Timestamp:    md.Timestamp,
		Stream:       md.Stream,
		Consumer:     md.Consumer,
		Domain:       md.Domain,
	}, nil
}

// Terminal wraps err so that the handler's JetStream message is terminated
// (never redelivered) with err as the reason, instead of naked.
func Terminal(err error) error {
	if err == nil {
		return nil
	}
	return &TerminalError{Err: err}
}

// TerminalError is an error that terminates a JetStream message. Err is
// the reason given to the server; a nil Err terminates without one.
type TerminalError struct{ Err error }

func (e *TerminalError) Error() string {
	if e.Err == nil {
		return "terminal"
	}
	return "terminal: " + e.Err.Error()
}
func (e *TerminalError) Unwrap() error { return e.Err }
