package publisher

import (
	"context"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/nats-io/nuid"
)

// Publish accepts data for subject into the buffer and returns with the
// [Future] of its ack; the send loop sends it. The data is copied. When
// the buffer is full it fails with [ErrBufferFull], or waits for room
// until ctx ends (on_full: block). A message too large for the server
// fails with [ErrTooLarge], a subject too long with [ErrSubjectTooLong],
// one that is not a literal subject (empty, with whitespace, an empty
// token or a wildcard) with [ErrBadSubject], a header name nats.go cannot
// encode with [ErrBadHeader] naming it, and any message once the
// publisher is stopping with [ErrStopped]. With a spool, Publish returns
// once the message is written there (and fsynced, with SpoolSync).
func (p *Buffered) Publish(ctx context.Context, subject string, data []byte, opts ...Option) (*Future, error) {
	return p.PublishMsg(ctx, &nats.Msg{Subject: subject, Data: data}, opts...)
}

// PublishMsg is [Buffered.Publish] for a message with headers. msg is
// copied; a nil msg fails at once with [ErrNilMsg].
func (p *Buffered) PublishMsg(ctx context.Context, msg *nats.Msg, opts ...Option) (*Future, error) {
	e, err := p.prepare(msg, opts)
	if err != nil {
		return nil, err
	}
	if err := p.accept(ctx, e, false); err != nil {
		return nil, err
	}
	return e.future, nil
}

// PublishSync publishes and waits for the stream's ack (or the final
// error, as [Future.Wait] returns them). When nothing older waits to be
// sent it hands the message to nats.go from this goroutine, which then
// may block while nats.go flushes a full write buffer; otherwise the
// message takes its turn in the buffer like any other. If ctx ends first,
// the message stays buffered and is still sent. So it does when the
// server refuses to declare the configured streams: PublishSync then
// returns at once with [ErrNotDeclared] wrapping the server's refusal,
// rather than wait for a send that cannot happen until a declaration
// succeeds. A declaration that failed for a passing reason (a timeout, no
// JetStream yet, a lost connection) is made again, and PublishSync waits.
func (p *Buffered) PublishSync(ctx context.Context, subject string, data []byte, opts ...Option) (*jetstream.PubAck, error) {
	e, err := p.prepare(&nats.Msg{Subject: subject, Data: data}, opts)
	if err != nil {
		return nil, err
	}
	if err := p.accept(ctx, e, true); err != nil {
		return nil, err
	}
	return p.waitSync(ctx, e.future)
}

// prepare copies msg into a new entry with its Msg-Id and options.
func (p *Buffered) prepare(msg *nats.Msg, opts []Option) (*entry, error) {
	if msg == nil {
		return nil, ErrNilMsg
	}
	m := &nats.Msg{Subject: msg.Subject, Data: append([]byte(nil), msg.Data...)}
	// The id is made before the options run: one of them may set its own
	// (WithMsgID), and each sees the id the message will be sent with.
	switch {
	case len(msg.Header) == 0 && !p.cfg.NoMsgID:
		// The usual message: its header is the id alone, written without
		// the canonicalizing and lookups of Header.Set and Get.
		m.Header = nats.Header{jetstream.MsgIDHeader: {nuid.Next()}}
	default:
		m.Header = copyHeader(msg.Header)
		if !p.cfg.NoMsgID && m.Header.Get(jetstream.MsgIDHeader) == "" {
			m.Header.Set(jetstream.MsgIDHeader, nuid.Next())
		}
	}
	for _, o := range opts {
		o(m.Header)
	}
	if err := checkMsg(m); err != nil {
		return nil, err
	}
	if err := CheckPayload(m, p.maxPayload.Load()); err != nil {
		return nil, err
	}
	return &entry{msg: m, size: msgSize(m), future: newFuture()}, nil
}

// accept admits e into the buffer, or fails, and has it sent: with sync,
// by the caller itself when nothing older waits, else by the send loop,
// which it wakes either way (a direct send held it back).
func (p *Buffered) accept(ctx context.Context, e *entry, sync bool) error {
	// A synchronous caller waits anyway: it sends from its own goroutine
	// rather than hand over to the send loop, which is most of the cost of
	// one publish. Publish always hands over, so that it never blocks in
	// nats.go's flush of a full write buffer.
	sess, err := p.admit(ctx, e, sync)
	if err != nil {
		return err
	}
	if sess != nil {
		p.sendDirect(e, sess)
	}
	p.wake()
	return nil
}
