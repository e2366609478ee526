package publisher

import (
	"context"
	"fmt"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/corral-go/corral/internal/jsapi"
)

// declaration is the outcome of one declaration of Config.Streams: done is
// closed when it fails, with err set before.
type declaration struct {
	done chan struct{}
	err  error
}

func newDeclaration() *declaration { return &declaration{done: make(chan struct{})} }

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
func (p *Buffered) declaredStreams(err error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.declareErr = err
	if err != nil {
		d := p.declared
		d.err = err
		close(d.done)
		p.declared = newDeclaration()
	}
}

// waitSync waits for f as [Future.Wait] does, but returns ErrNotDeclared
// with the declaration's error when the last declaration of the streams
// failed, or the next one fails: the caller would otherwise learn only
// that its ctx ended.
func (p *Buffered) waitSync(ctx context.Context, f *Future) (*jetstream.PubAck, error) {
	p.mu.Lock()
	next, err := p.declared, p.declareErr
	p.mu.Unlock()
	if err == nil {
		select {
		case <-f.done:
			return f.ack, f.err
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-next.done:
			err = next.err
		}
	}
	select {
	case <-f.done: // settled meanwhile, by a stop perhaps
		return f.ack, f.err
	default:
		return nil, both{ErrNotDeclared, err}
	}
}
