package publisher

import (
	"context"
	"errors"

	"github.com/nats-io/nats.go/jetstream"
)

// Future is the outcome of one published message: the stream's ack, or
// the error it failed with for good. Every accepted message's Future is
// completed once, also when a stop does not deliver it. Its methods are
// safe for concurrent use.
type Future struct {
	done chan struct{}
	ack  *jetstream.PubAck
	err  error
}

// newFuture returns a Future not yet complete.
func newFuture() *Future { return &Future{done: make(chan struct{})} }

// Done returns a channel closed once the message is acknowledged by the
// stream or has failed for good.
func (f *Future) Done() <-chan struct{} { return f.done }

// Result returns the stream's ack or the final error; call it after Done
// is closed (before, it returns an error saying so).
func (f *Future) Result() (*jetstream.PubAck, error) {
	select {
	case <-f.done:
		return f.ack, f.err
	default:
		return nil, errors.New("publisher: not settled yet")
	}
}

// Wait waits for the outcome and returns Result's, or ctx.Err() if ctx
// ends first (the message stays buffered and is still sent).
func (f *Future) Wait(ctx context.Context) (*jetstream.PubAck, error) {
	select {
	case <-f.done:
		return f.ack, f.err
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// complete sets the outcome; it is called once, by settle or undeliver.
func (f *Future) complete(ack *jetstream.PubAck, err error) {
	f.ack, f.err = ack, err
	close(f.done)
}
