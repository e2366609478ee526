package corral

import (
	"context"
	"errors"
	"fmt"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/corral-go/corral/publisher"
)

// Publisher is the buffered publisher.
func (c *Client) Publisher() *publisher.Buffered { return c.pub }

// Publish accepts a message for a JetStream stream into the buffered
// publisher and returns once it is buffered, with the Future of its ack;
// see publisher.Buffered.Publish. It works before the connection is up:
// the message is sent when it is.
func (c *Client) Publish(ctx context.Context, subject string, data []byte, opts ...publisher.Option) (*publisher.Future, error) {
	if c.tracer == nil {
		return c.pub.Publish(ctx, subject, data, opts...)
	}
	ctx, span := c.tracer.StartSend(ctx, Send{Op: "send", Name: subject, Subject: subject, Size: len(data)})
	f, err := c.pub.Publish(ctx, subject, data, traced(span, opts)...)
	span.End(err)
	return f, err
}

// PublishMsg is Publish for a message with headers; msg is copied (a nil
// msg fails at once), and
// opts set their headers over msg's. A Nats-Msg-Id header in msg is kept
// as the message's id, as publisher.WithMsgID sets it; see
// publisher.Buffered.PublishMsg.
func (c *Client) PublishMsg(ctx context.Context, msg *nats.Msg, opts ...publisher.Option) (*publisher.Future, error) {
	if c.tracer == nil || msg == nil {
		return c.pub.PublishMsg(ctx, msg, opts...)
	}
	ctx, span := c.tracer.StartSend(ctx, Send{Op: "send", Name: msg.Subject, Subject: msg.Subject, Size: len(msg.Data)})
	f, err := c.pub.PublishMsg(ctx, msg, traced(span, opts)...)
	span.End(err)
	return f, err
}

// PublishSync publishes through the buffer and waits for the stream's ack.
// When the server refuses to declare the configured streams it returns at
// once with publisher.ErrNotDeclared wrapping the refusal (the message
// stays buffered); a declaration that failed for a passing reason is made
// again, and PublishSync waits for it. See publisher.Buffered.PublishSync.
func (c *Client) PublishSync(ctx context.Context, subject string, data []byte, opts ...publisher.Option) (*jetstream.PubAck, error) {
	if c.tracer == nil {
		return c.pub.PublishSync(ctx, subject, data, opts...)
	}
	ctx, span := c.tracer.StartSend(ctx, Send{Op: "send", Name: subject, Subject: subject, Size: len(data)})
	ack, err := c.pub.PublishSync(ctx, subject, data, traced(span, opts)...)
	span.End(err)
	return ack, err
}

// PublishCore publishes on core NATS: at most once, with no ack and no
// buffer of Corral's. Where the connection is decides what it does:
//
//   - connected: it hands the message to nats.go and returns;
//   - reconnecting (the connection dropped and nats.go is reconnecting
//     it): the message goes into nats.go's reconnect buffer, sent once
//     the connection is back, and PublishCore returns at once. When that
//     buffer is full, or disabled (connection.reconnect_buf_size: -1), it
//     fails at once with an error wrapping ErrDisconnected and
//     nats.ErrReconnectBufExceeded;
//   - not connected yet, or closed for good and not yet replaced: it waits
//     for the connection until ctx ends, then fails with ctx's error;
//   - once Run has returned (and until Run is called again): it fails at
//     once with an error wrapping ErrNotRunning, as does a PublishCore
//     waiting when Run returns. Before the first Run it waits, as above
//     (the rule of every call that needs the connection: ErrNotRunning).
//
// Data larger than the server's max payload fails, as Publish does, with
// an error wrapping publisher.ErrTooLarge that says both sizes; it also
// matches nats.ErrMaxPayload. PublishCore refuses what Publish refuses,
// at once and with the same errors (see publisher.CheckMsg): a subject
// longer than subject's limit fails with publisher.ErrSubjectTooLong; one
// that is not a literal subject (empty, with whitespace, an empty token
// or a wildcard) with publisher.ErrBadSubject, which matches
// nats.ErrBadSubject too; a header name nats.go cannot encode with
// publisher.ErrBadHeader. Sent, a subject too long would make the server
// close the connection every handler and publish shares, and one with a
// wildcard would reach no subscriber.
func (c *Client) PublishCore(ctx context.Context, subject string, data []byte) error {
	return c.PublishCoreMsg(ctx, &nats.Msg{Subject: subject, Data: data})
}

// PublishCoreMsg is PublishCore for a message with headers (and a reply
// subject, if msg has one). The size it checks counts the headers; the
// reply subject is checked as the subject is, and a nil msg fails with
// publisher.ErrNilMsg.
func (c *Client) PublishCoreMsg(ctx context.Context, msg *nats.Msg) error {
	if c.tracer == nil || msg == nil {
		return c.publishCore(ctx, msg)
	}
	ctx, span := c.tracer.StartSend(ctx, Send{Op: "send", Name: msg.Subject, Subject: msg.Subject, Size: len(msg.Data),
		MsgID: msg.Header.Get(jetstream.MsgIDHeader)})
	err := c.publishCore(ctx, &nats.Msg{Subject: msg.Subject, Reply: msg.Reply, Data: msg.Data, Header: span.Header(msg.Header)})
	span.End(err)
	return err
}

// publishCore is PublishCoreMsg, untraced.
func (c *Client) publishCore(ctx context.Context, msg *nats.Msg) error {
	if err := publisher.CheckMsg(msg); err != nil {
		return err
	}
	for {
		phase, err := c.currentPhase()
		if err != nil {
			return fmt.Errorf("publish to %q: %w", msg.Subject, err)
		}
		nc, gone, changed := c.conn.Current()
		if nc == nil {
			select {
			case <-ctx.Done():
				return fmt.Errorf("publish to %q: waiting for the connection: %w", msg.Subject, ctx.Err())
			case <-changed:
				continue
			case <-phase.done: // Run began or returned
				continue
			}
		}
		if err := publisher.CheckPayload(msg, nc.MaxPayload()); err != nil {
			return err
		}
		err = nc.PublishMsg(msg)
		switch {
		case err == nil:
			return nil
		case errors.Is(err, nats.ErrConnectionClosed) && !nc.IsDraining():
			// Closed for good under us: wait for its replacement.
			select {
			case <-ctx.Done():
				return fmt.Errorf("publish to %q: waiting for the connection: %w", msg.Subject, ctx.Err())
			case <-gone:
				continue
			case <-phase.done:
				continue
			}
		case errors.Is(err, nats.ErrReconnectBufExceeded):
			return &bufExceeded{subject: msg.Subject, size: int64(c.cfg.Connection.ReconnectBufSize), err: err}
		}
		return fmt.Errorf("publish to %q: %w", msg.Subject, err)
	}
}

// bufExceeded is a core publish refused while reconnecting: nats.go's
// reconnect buffer is full or disabled. Its text is Corral's alone; it
// matches ErrDisconnected and nats.ErrReconnectBufExceeded.
type bufExceeded struct {
	subject string
	size    int64 // as configured: -1 disabled, 0 the default
	err     error
}

func (e *bufExceeded) Error() string {
	if e.size < 0 {
		return fmt.Sprintf("%v: publish to %q while reconnecting: the reconnect buffer is disabled (connection.reconnect_buf_size: -1)", ErrDisconnected, e.subject)
	}
	return fmt.Sprintf("%v: publish to %q while reconnecting: the reconnect buffer is full (connection.reconnect_buf_size)", ErrDisconnected, e.subject)
}

func (e *bufExceeded) Unwrap() []error { return []error{ErrDisconnected, e.err} }
