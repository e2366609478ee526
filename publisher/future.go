package publisher

import (
	"context"
	"errors"

	"github.com/nats-io/nats.go/jetstream"
)

// Future is the outcome of one published message.
type Future struct {
	done chan struct{}
	ack  *jetstream.PubAck
	err  error
}

func newFuture() *Future { return &Future{done: make(chan struct{})} }

// Done is closed once the message is acknowledged by the stream or has
// failed for good.
func (f *Future) Done() <-chan struct{} { return f.done }

// Result is the stream's ack or the final error; call it after Done.
func (f *Future) Result() (*jetstream.PubAck, error) {
	select {
	case <-f.done:
		return f.ack, f.err
	default:
		return nil, errors.New("publisher: not settled yet")
	}
}

// Wait waits for the outcome, or until ctx ends (the message stays
// buffered and is still sent).
func (f *Future) Wait(ctx context.Context) (*jetstream.PubAck, error) {
	select {
	case <-f.done:
		return f.ack, f.err
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

func (f *Future) complete(ack *jetstream.PubAck, err error) {
	f.ack, f.err = ack, err
	close(f.done)
}
