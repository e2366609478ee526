package consumer

import (
	"context"
	"strconv"
	"time"
)

// A JetStream message is settled once: acked, naked or terminated. The
// handler may settle it itself; otherwise its result does (see settle.go).
// Each method returns ErrNotJetStream for a core message and ErrSettled
// for a message settled already.

// Ack acknowledges the message now, instead of when the handler returns;
// the handler's result then no longer settles it.
func (m *Msg) Ack() error { return m.settle(ackBody) }

// DoubleAck acknowledges the message and waits for the server to confirm
// it, so that it is not redelivered for want of the ack.
func (m *Msg) DoubleAck(ctx context.Context) error {
	if m.js == nil {
		return ErrNotJetStream
	}
	m.js.mu.Lock()
	if m.js.settled {
		m.js.mu.Unlock()
		return ErrSettled
	}
	m.js.settled = true
	// Not held over the round trip: settled already refuses in-progress
	// acks, and the keepalive must not wait on a slow confirmation.
	m.js.mu.Unlock()
	_, err := m.js.nc.RequestWithContext(ctx, m.raw.Reply, ackBody)
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
	if m.js == nil {
		return ErrNotJetStream
	}
	m.js.mu.Lock()
	defer m.js.mu.Unlock()
	if m.js.settled {
		return ErrSettled
	}
	m.js.alive.Store(time.Now().UnixNano())
	return m.js.nc.Publish(m.raw.Reply, progressBody)
}

var (
	ackBody      = []byte("+ACK")
	nakBody      = []byte("-NAK")
	termBody     = []byte("+TERM")
	progressBody = []byte("+WPI")
)

func (m *Msg) settle(body []byte) error {
	if m.js == nil {
		return ErrNotJetStream
	}
	m.js.mu.Lock()
	defer m.js.mu.Unlock()
	if m.js.settled {
		return ErrSettled
	}
	m.js.settled = true
	return m.js.nc.Publish(m.raw.Reply, body)
}

func (m *Msg) isSettled() bool {
	m.js.mu.Lock()
	defer m.js.mu.Unlock()
	return m.js.settled
}
