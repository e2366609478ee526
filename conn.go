package corral

import (
	"context"

	"github.com/nats-io/nats.go"

	"github.com/corral-go/corral/connection"
)

// Conn returns the live connection, waiting until it is connected or ctx
// ends. Once Run has returned, and until the next Run begins, it fails at
// once with ErrNotRunning, as does a Conn waiting when Run returns;
// before the first Run it waits (see ErrNotRunning). It is the escape
// hatch to everything nats.go does; the Client replaces the connection
// if it closes for good, so do not keep it across such a replacement:
// ask again, or use ConnectionSupervisor().Conn, which says when.
func (c *Client) Conn(ctx context.Context) (*nats.Conn, error) {
	nc, _, err := c.liveConn(ctx)
	return nc, err
}

// ConnectionSupervisor is the child that owns the connection, for
// dependents that follow it across replacements: its Conn returns a
// channel closed when the connection is gone, and its Observe the
// connection's status with a channel closed when it changes. Unlike the
// Client's calls, its Conn waits for a connection whether or not the
// Client runs.
func (c *Client) ConnectionSupervisor() *connection.Supervisor { return c.conn }

// liveConn returns the connection once it is connected, and gone, closed
// when it has closed for good. It waits within ctx, and fails with
// ErrNotRunning once Run has returned, until the next Run begins: at once,
// or when Run returns while it waits.
func (c *Client) liveConn(ctx context.Context) (nc *nats.Conn, gone <-chan struct{}, err error) {
	for {
		phase, err := c.currentPhase()
		if err != nil {
			return nil, nil, err
		}
		nc, gone, changed := c.conn.Current()
		if nc != nil && nc.IsConnected() {
			return nc, gone, nil
		}
		select {
		case <-ctx.Done():
			return nil, nil, ctx.Err()
		case <-changed: // connected, or replaced
		case <-phase.done: // Run began or returned
		}
	}
}

// clientSource is the connection.Source of the buckets, stores and locks
// the Client opens (KV, ObjectStore, Lock), which the application calls
// whether or not the Client runs: their calls wait for the connection as
// the Client's own do (liveConn), failing with ErrNotRunning once Run has
// returned rather than waiting out their ctx.
type clientSource struct{ client *Client }

func (s clientSource) Conn(ctx context.Context) (*nats.Conn, <-chan struct{}, error) {
	return s.client.liveConn(ctx)
}

func (s clientSource) Observe() (connection.Status, <-chan struct{}) { return s.client.conn.Observe() }

func (s clientSource) OnAsyncError(fn func(nc *nats.Conn, err error)) (release func()) {
	return s.client.conn.OnAsyncError(fn)
}

func (s clientSource) ClaimSlowConsumer(sub *nats.Subscription, report func()) (release func()) {
	return s.client.conn.ClaimSlowConsumer(sub, report)
}
