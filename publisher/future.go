package publisher

import (
	"context"
	"errors"
	"sync"

	"github.com/nats-io/nats.go/jetstream"
)

// Future is the outcome of one published message: the stream's ack, or
// the error it failed with for good. Every accepted message's Future is
// completed once, also when a stop does not deliver it. Its methods are
// safe for concurrent use.
type Future struct {
	mu       sync.Mutex
	complete bool
	ack      *jetstream.PubAck
	err      error
	// done is made by the first Done or Wait before completion: most
	// Futures complete unobserved, and a channel each would cost a
	// buffered publish an allocation and a close.
	done chan struct{}
}

// closed is the Done of a Future that was complete when asked.
var closed = func() chan struct{} {
	c := make(chan struct{})
	close(c)
	return c
}()

// newFuture returns a Future not yet complete.
func newFuture() *Future { return &Future{} }

// Done returns a channel closed once the message is acknowledged by the
// stream or has failed for good.
func (f *Future) Done() <-chan struct{} {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.complete {
		return closed
	}
	if f.done == nil {
		f.done = make(chan struct{})
	}
	return f.done
}

// Result returns the stream's ack or the final error; call it after Done
// is closed (before, it returns an error saying so).
func (f *Future) Result() (*jetstream.PubAck, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if !f.complete {
		return nil, errors.New("publisher: not settled yet")
	}
	return f.ack, f.err
}

// Wait waits for the outcome and returns Result's, or ctx.Err() if ctx
// ends first (the message stays buffered and is still sent).
func (f *Future) Wait(ctx context.Context) (*jetstream.PubAck, error) {
	select {
	case <-f.Done():
		return f.Result()
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// settle sets the outcome; it is called once, by Buffered.settle or
// undeliver.
func (f *Future) settle(ack *jetstream.PubAck, err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.ack, f.err, f.complete = ack, err, true
	if f.done != nil {
		close(f.done)
	}
}
