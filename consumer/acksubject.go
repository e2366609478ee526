package consumer

import (
	"fmt"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// errNotAckSubject is parseAckSubject's error for a reply subject that is
// not a JetStream ack subject; it matches nats.ErrNotJSMessage, as
// nats.go's Msg.Metadata fails for such a message.
var errNotAckSubject = fmt.Errorf("%w: the reply is not an ack subject", nats.ErrNotJSMessage)

// parseAckSubject reads a JetStream message's metadata from its ack
// subject into md, as nats.go's Msg.Metadata does, without allocating:
//
//	$JS.ACK.<stream>.<consumer>.<delivered>.<sseq>.<cseq>.<ts>.<pending>
//	$JS.ACK.<domain>.<account hash>.<stream>.<consumer>.<delivered>.<sseq>.<cseq>.<ts>.<pending>[.<token>...]
//
// The first form is an older server's: 9 tokens. The second has at least
// 11; a domain of "_" is none.
func parseAckSubject(reply string, md *jetstream.MsgMetadata) error {
	rest, ok := strings.CutPrefix(reply, "$JS.ACK.")
	if !ok {
		return errNotAckSubject
	}
	var tokens [9]string // domain, hash, stream, ... pending
	switch n := strings.Count(rest, ".") + 1; {
	case n == 7:
		for i := 2; i < len(tokens); i++ {
			tokens[i], rest, _ = strings.Cut(rest, ".")
		}
	case n >= 9:
		for i := range tokens {
			tokens[i], rest, _ = strings.Cut(rest, ".")
		}
	default:
		return errNotAckSubject
	}
	*md = jetstream.MsgMetadata{
		Sequence:     jetstream.SequencePair{Stream: ackNum(tokens[5]), Consumer: ackNum(tokens[6])},
		NumDelivered: ackNum(tokens[4]),
		NumPending:   ackNum(tokens[8]),
		Timestamp:    time.Unix(0, int64(ackNum(tokens[7]))),
		Stream:       tokens[2],
		Consumer:     tokens[3],
		Domain:       tokens[0],
	}
	if md.Domain == "_" {
		md.Domain = ""
	}
	return nil
}

// ackNum is a decimal token of an ack subject; 0 when it is not one, as
// nats.go reads it.
func ackNum(s string) (n uint64) {
	for i := range len(s) {
		c := s[i]
		if c < '0' || c > '9' {
			return 0
		}
		n = n*10 + uint64(c-'0')
	}
	return n
}
