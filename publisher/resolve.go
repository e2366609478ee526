package publisher

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

const (
	// lookupTimeout bounds the lookups the send loop makes between sends,
	// so that they hold up what waits behind them only briefly.
	lookupTimeout = 2 * time.Second
)

// resolve settles e, refused for an expectation: as a duplicate when the
// stream holds a message with its Msg-Id where e would be, as failed
// otherwise.
func (p *Buffered) resolve(ctx context.Context, sess *session, e *entry) {
	lctx, cancel := context.WithTimeout(ctx, lookupTimeout)
	defer cancel()
	ack, err := storedAlready(lctx, sess.js, e.msg)
	switch {
	case ack != nil:
		p.settle(e, ack, nil)
	case err != nil:
		p.settle(e, nil, errors.Join(e.lastErr, fmt.Errorf("publisher: looking for the message in the stream: %w", err)))
	default:
		p.settle(e, nil, e.lastErr)
	}
}

// storedAlready looks for m where its expectation says it would be: the
// message after the expected last sequence (on m's subject, for a
// per-subject one), or the last message on m's subject. It returns an ack
// for it if it carries m's Msg-Id.
func storedAlready(ctx context.Context, js jetstream.JetStream, m *nats.Msg) (*jetstream.PubAck, error) {
	name, err := js.StreamNameBySubject(ctx, m.Subject)
	if err != nil {
		return nil, err
	}
	s, err := js.Stream(ctx, name)
	if err != nil {
		return nil, err
	}
	var raw *jetstream.RawStreamMsg
	switch h := m.Header; {
	case h.Get(jetstream.ExpectedLastSeqHeader) != "":
		seq, perr := strconv.ParseUint(h.Get(jetstream.ExpectedLastSeqHeader), 10, 64)
		if perr != nil {
			return nil, perr
		}
		raw, err = s.GetMsg(ctx, seq+1)
	case h.Get(jetstream.ExpectedLastSubjSeqHeader) != "":
		seq, perr := strconv.ParseUint(h.Get(jetstream.ExpectedLastSubjSeqHeader), 10, 64)
		if perr != nil {
			return nil, perr
		}
		raw, err = s.GetMsg(ctx, seq+1, jetstream.WithGetMsgSubject(m.Subject))
	default:
		raw, err = s.GetLastMsgForSubject(ctx, m.Subject)
	}
	if errors.Is(err, jetstream.ErrMsgNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	if id := m.Header.Get(jetstream.MsgIDHeader); id == "" || raw.Header.Get(jetstream.MsgIDHeader) != id {
		return nil, nil
	}
	return &jetstream.PubAck{Stream: name, Sequence: raw.Sequence, Duplicate: true}, nil
}

// noStreamStores reports whether no stream stores subject, remembering the
// answer for a second so that a burst does not ask for every message.
func (p *Buffered) noStreamStores(ctx context.Context, js jetstream.JetStream, subject string) bool {
	p.noStreamMu.Lock()
	at, known := p.noStream[subject]
	p.noStreamMu.Unlock()
	if known && time.Since(at) < time.Second {
		return true
	}
	lctx, cancel := context.WithTimeout(ctx, lookupTimeout)
	defer cancel()
	_, err := js.StreamNameBySubject(lctx, subject)
	missing := errors.Is(err, jetstream.ErrStreamNotFound)
	p.noStreamMu.Lock()
	if missing {
		p.noStream[subject] = time.Now()
	} else {
		delete(p.noStream, subject)
	}
	p.noStreamMu.Unlock()
	return missing
}
