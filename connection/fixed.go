package connection

import (
	"context"

	"github.com/nats-io/nats.go"
)

// Fixed hands out one connection that the application manages itself, to
// packages that take their connection from a Supervisor (handlers, the
// publisher). It is never replaced: the channel Conn returns is never
// closed, and when the application closes nc, what uses it stops working.
type Fixed struct{ nc *nats.Conn }

// NewFixed returns a Fixed for nc.
func NewFixed(nc *nats.Conn) *Fixed { return &Fixed{nc: nc} }

// Conn returns the connection at once.
func (f *Fixed) Conn(ctx context.Context) (*nats.Conn, <-chan struct{}, error) {
	if err := ctx.Err(); err != nil {
		return nil, nil, err
	}
	return f.nc, nil, nil
}
