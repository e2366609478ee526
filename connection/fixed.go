package connection

import (
	"context"
	"fmt"
	"sync"

	"github.com/nats-io/nats.go"
)

// Fixed is a [Source] for one connection that the application manages
// itself (made with nats.Connect, closed by the application). It is never
// replaced: Conn returns it until it is closed, then fails with ErrClosed,
// and the channel Conn returns is closed when it closes.
//
// NewFixed installs disconnect, reconnect, closed and error handlers on
// the connection that call the ones set before, so that dependents hear of
// state changes, slow consumers and refused publishes; a handler set on
// the connection after NewFixed replaces Fixed's, and dependents then
// learn less (they still work, as with any nats.go connection). Fixed
// emits no events: the application's own handlers see everything.
//
// Once the application closes the connection, dependents fail with
// ErrClosed each time they are started again: a tree keeps restarting
// them with backoff, each failure an event, until it stops.
type Fixed struct {
	nc        *nats.Conn
	listeners listeners

	mu      sync.Mutex
	changed chan struct{} // closed and replaced when nc reconnects or closes
	closed  chan struct{}
}

var _ Source = (*Fixed)(nil)

var errFixedClosed = fmt.Errorf("%w: %w", ErrClosed, nats.ErrConnectionClosed)

// NewFixed returns a Fixed for nc. A nil nc makes a Fixed whose Conn
// fails with ErrClosed: for dependents built and never used.
func NewFixed(nc *nats.Conn) *Fixed {
	f := &Fixed{nc: nc, changed: make(chan struct{}), closed: make(chan struct{})}
	if nc == nil {
		close(f.closed)
		return f
	}
	reconnected, closed, errs := nc.ReconnectHandler(), nc.ClosedHandler(), nc.ErrorHandler()
	// nats.go calls the deprecated DisconnectedCB only when no
	// DisconnectedErrCB is set, so Fixed's must call it in its place; it
	// has no getter, and is read as NewFixed is called.
	disconnectedErr, disconnected := nc.DisconnectErrHandler(), nc.Opts.DisconnectedCB
	nc.SetDisconnectErrHandler(func(c *nats.Conn, err error) {
		f.change(false)
		switch {
		case disconnectedErr != nil:
			disconnectedErr(c, err)
		case disconnected != nil:
			disconnected(c)
		}
	})
	nc.SetReconnectHandler(func(c *nats.Conn) {
		f.change(false)
		callConn(reconnected, c)
	})
	nc.SetClosedHandler(func(c *nats.Conn) {
		f.change(true)
		callConn(closed, c)
	})
	nc.SetErrorHandler(func(c *nats.Conn, sub *nats.Subscription, err error) {
		f.listeners.dispatch(c, sub, err)
		if errs != nil {
			errs(c, sub, err)
		}
	})
	if nc.IsClosed() {
		f.change(true)
	}
	return f
}

func (f *Fixed) change(closed bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if closed {
		select {
		case <-f.closed:
			return
		default:
			close(f.closed)
		}
	}
	close(f.changed)
	f.changed = make(chan struct{})
}

// Conn returns the connection at once, connected or reconnecting (nats.go
// buffers what is published meanwhile), and a channel closed when it
// closes. Once it is closed, Conn fails with an error that matches both
// ErrClosed and nats.ErrConnectionClosed.
func (f *Fixed) Conn(ctx context.Context) (*nats.Conn, <-chan struct{}, error) {
	if err := ctx.Err(); err != nil {
		return nil, nil, err
	}
	if f.nc == nil || f.nc.IsClosed() {
		return nil, nil, errFixedClosed
	}
	return f.nc, f.closed, nil
}

// Observe returns the connection's status, read from nats.go, and a
// channel closed when it next disconnects, reconnects or closes (not at a
// first connect made after NewFixed: nats.go offers no handler for it).
func (f *Fixed) Observe() (Status, <-chan struct{}) {
	f.mu.Lock()
	changed := f.changed
	f.mu.Unlock()
	st := Status{State: StateStopped}
	if f.nc == nil {
		return st, changed
	}
	st.Generation = 1
	switch f.nc.Status() {
	case nats.CONNECTED:
		st.State = StateConnected
	case nats.CONNECTING:
		st.State = StateConnecting
	case nats.RECONNECTING, nats.DISCONNECTED:
		st.State = StateReconnecting
	case nats.DRAINING_SUBS, nats.DRAINING_PUBS:
		st.State = StateDraining
	case nats.CLOSED:
		st.State = StateClosed
	}
	if st.State != StateClosed {
		st.URL = withoutUserinfo(f.nc.ConnectedUrl())
		st.ServerID, st.ServerName = f.nc.ConnectedServerId(), f.nc.ConnectedServerName()
	}
	if err := f.nc.LastError(); err != nil {
		st.LastError = err.Error()
	}
	st.Stats = f.nc.Stats()
	return st, changed
}

// Status returns the connection's status, as Watch does.
func (f *Fixed) Status() Status {
	st, _ := f.Observe()
	return st
}

// OnAsyncError calls fn with every error nats.go reports on the
// connection that belongs to no subscription, until release is called.
// fn runs on nats.go's callback goroutine and must not block.
func (f *Fixed) OnAsyncError(fn func(nc *nats.Conn, err error)) (release func()) {
	return f.listeners.onAsyncError(fn)
}

// ClaimSlowConsumer routes nats.go's slow-consumer errors for sub to
// report, until release is called.
func (f *Fixed) ClaimSlowConsumer(sub *nats.Subscription, report func()) (release func()) {
	return f.listeners.claimSlowConsumer(sub, report)
}
