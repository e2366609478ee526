package publisher

import (
	"fmt"

	"github.com/nats-io/nats.go"
)

// CheckPayload returns an error wrapping ErrTooLarge (and
// nats.ErrMaxPayload) that says both sizes when m's data and headers are
// more than limit, the server's max payload; else nil. A core publish
// checks with it as Publish does.
func CheckPayload(m *nats.Msg, limit int64) error {
	if size := payloadSize(m); int64(size) > limit {
		return &tooLarge{size: size, limit: limit, headers: len(m.Header) > 0}
	}
	return nil
}

// payloadSize is what nats-server checks against its max payload: the data
// and the encoded headers ("NATS/1.0\r\n", "Key: value\r\n" each, "\r\n").
func payloadSize(m *nats.Msg) int {
	n := len(m.Data)
	if len(m.Header) == 0 {
		return n
	}
	n += len("NATS/1.0\r\n") + len("\r\n")
	for k, vs := range m.Header {
		for _, v := range vs {
			n += len(k) + len(": ") + len(v) + len("\r\n")
		}
	}
	return n
}

// msgSize is what a message counts against BufferBytes.
func msgSize(m *nats.Msg) int { return len(m.Subject) + payloadSize(m) }

// tooLarge is ErrTooLarge with its sizes. It matches nats.ErrMaxPayload
// too, what nats.go returns for the same.
type tooLarge struct {
	size    int
	limit   int64
	headers bool
}

func (e *tooLarge) Error() string {
	what := "data"
	if e.headers {
		what = "data and headers"
	}
	return fmt.Sprintf("%v: %d bytes of %s, the server accepts %d", ErrTooLarge, e.size, what, e.limit)
}

func (e *tooLarge) Unwrap() []error { return []error{ErrTooLarge, nats.ErrMaxPayload} }

// MaxPayload returns the largest message, data and headers, the server
// takes, as the publisher last learnt it from a connection: nats-server's
// default, 1 MiB, before its first. Publish refuses a larger message with
// ErrTooLarge.
func (p *Buffered) MaxPayload() int64 { return p.maxPayload.Load() }
