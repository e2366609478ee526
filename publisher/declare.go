package publisher

import (
	"context"
	"errors"
	"fmt"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/corral-go/corral/internal/jsapi"
	"github.com/corral-go/corral/stream"
)

// declaration is the outcome of one declaration of Config.Streams: done is
// closed when the server refuses it, with err set before.
type declaration struct {
	done chan struct{}
	err  error
}

func newDeclaration() *declaration { return &declaration{done: make(chan struct{})} }

// refusal returns d's error once the server refused it, else nil.
func (d *declaration) refusal() error {
	select {
	case <-d.done:
		return d.err
	default:
		return nil
	}
}

// declareStreams creates the configured streams, or updates them to match.
func (p *Buffered) declareStreams(ctx context.Context, sess *session) error {
	for name, sc := range p.cfg.Streams {
		dctx, cancel := context.WithTimeout(ctx, jsapi.Timeout)
		_, err := sc.Declare(dctx, sess.js, name)
		cancel()
		if err != nil {
			return fmt.Errorf("publisher: declare stream %q: %w", name, err)
		}
	}
	return nil
}

// declaredStreams records the outcome of a declaration, err nil when it
// succeeded, for the PublishSync callers waiting on it and those to come.
// Only the server's refusal is recorded as a failure: a deadline, no
// responders, a JetStream unavailable for now or a connection lost says
// nothing of the next declaration, which the restart makes, and
// PublishSync keeps waiting for it rather than send its caller to
// publish again a message that stays buffered.
func (p *Buffered) declaredStreams(err error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	last := p.declared.refusal()
	switch {
	case err == nil && last != nil:
		p.declared = newDeclaration()
	case err != nil && refused(err):
		d := p.declared
		if last != nil {
			d = newDeclaration()
			p.declared = d
		}
		d.err = err
		close(d.done)
	}
}

// refused reports whether err says that declaring the streams again
// cannot succeed: the server's refusal, or a server too old for a
// stream's message schedules.
func refused(err error) bool {
	return jsapi.DeclareRefused(err) || errors.Is(err, stream.ErrSchedulesUnsupported)
}

// waitSync waits for f as [Future.Wait] does, but returns ErrNotDeclared
// with the declaration's error when the server refused the last
// declaration of the streams, or refuses the next one: the caller would
// otherwise learn only that its ctx ended.
func (p *Buffered) waitSync(ctx context.Context, f *Future) (*jetstream.PubAck, error) {
	p.mu.Lock()
	d := p.declared
	p.mu.Unlock()
	err := d.refusal()
	if err == nil {
		select {
		case <-f.Done():
			return f.Result()
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-d.done:
			err = d.err
		}
	}
	select {
	case <-f.Done(): // settled meanwhile, by a stop perhaps
		return f.Result()
	default:
		return nil, both{ErrNotDeclared, err}
	}
}
