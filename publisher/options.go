package publisher

import (
	"fmt"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// Option sets a header on a published message: its Msg-Id, or an
// expectation the stream checks before storing it. A failed expectation
// is a final error (after a re-send, the publisher first looks whether
// the stream stored the message already). Options run on the publisher's
// copy of the headers, in order, after the generated Nats-Msg-Id (if
// any) is set, so each sees the id the message would be sent with.
type Option func(h nats.Header)

// WithMsgID sets the message's Nats-Msg-Id instead of a generated one:
// the stream stores one message per id within its duplicate window.
func WithMsgID(id string) Option {
	return func(h nats.Header) { h.Set(jetstream.MsgIDHeader, id) }
}

// WithExpectStream fails the publish unless it lands in stream.
func WithExpectStream(stream string) Option {
	return func(h nats.Header) { h.Set(jetstream.ExpectedStreamHeader, stream) }
}

// WithExpectLastSequence fails the publish unless the stream's last
// sequence is seq.
func WithExpectLastSequence(seq uint64) Option {
	return func(h nats.Header) { h.Set(jetstream.ExpectedLastSeqHeader, fmt.Sprint(seq)) }
}

// WithExpectLastSequencePerSubject fails the publish unless the last
// sequence on its subject is seq.
func WithExpectLastSequencePerSubject(seq uint64) Option {
	return func(h nats.Header) { h.Set(jetstream.ExpectedLastSubjSeqHeader, fmt.Sprint(seq)) }
}

// WithExpectLastMsgID fails the publish unless the stream's last message
// has Nats-Msg-Id id.
func WithExpectLastMsgID(id string) Option {
	return func(h nats.Header) { h.Set(jetstream.ExpectedLastMsgIDHeader, id) }
}
