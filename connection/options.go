package connection

import (
	"errors"
	"math/rand/v2"
	"slices"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/corral-go/corral/internal/backoff"
)

// options builds the nats.go options for connection l: the configuration,
// then a callback for every state change, then the caller's extra options.
func (s *Supervisor) options(l *live) []nats.Option {
	c := s.cfg
	maxReconnects := c.MaxReconnects
	if maxReconnects <= 0 {
		maxReconnects = -1
	}
	opts := []nats.Option{
		nats.Name(c.Name),
		nats.MaxReconnects(maxReconnects),
		nats.ReconnectWait(c.ReconnectWait),
		nats.CustomReconnectDelay(reconnectDelay(c.ReconnectWait, c.MaxReconnectWait, c.ReconnectJitter)),
		nats.ReconnectBufSize(int(c.ReconnectBufSize)),
		nats.PingInterval(c.PingInterval),
		nats.MaxPingsOutstanding(c.MaxPingsOutstanding),
		nats.Timeout(c.ConnectTimeout),
		nats.RetryOnFailedConnect(*c.RetryOnFailedConnect),
		nats.DrainTimeout(c.DrainTimeout),
	}
	if c.NoRandomize {
		opts = append(opts, nats.DontRandomize())
	}
	if !*c.Reconnect {
		opts = append(opts, nats.NoReconnect())
	}
	opts = append(opts, tlsOptions(c.TLS)...)
	opts = append(opts, authOptions(c.Auth)...)
	opts = append(opts, c.Options...)
	// Ours come last so that they are installed; they call any the
	// caller's options set.
	var theirs nats.Options
	for _, o := range c.Options {
		_ = o(&theirs)
	}
	return append(opts, s.callbacks(l, &theirs)...)
}

// servers sets the servers nats.go connects to as a list, each URL whole.
func servers(urls []string) nats.Option {
	return func(o *nats.Options) error {
		o.Servers = slices.Clone(urls)
		return nil
	}
}

// reconnectDelay returns nats.go's delay after the attempts-th full round
// of the server list (from 1): wait doubled attempts-1 times, at most
// maxWait, plus a random [0, jitter) so that many clients spread out.
// Neither the doubling nor the jitter wraps, whatever the durations.
func reconnectDelay(wait, maxWait, jitter time.Duration) func(int) time.Duration {
	return func(attempts int) time.Duration {
		d := backoff.Doubling(wait, maxWait, attempts-1)
		if jitter > 0 {
			d = backoff.AddSat(d, rand.N(jitter))
		}
		return d
	}
}

// callbacks turns every state change of connection l into status and an
// event, then calls the caller's own callback, if any.
func (s *Supervisor) callbacks(l *live, theirs *nats.Options) []nats.Option {
	ev := s.events
	return []nats.Option{
		nats.ConnectHandler(func(nc *nats.Conn) {
			l.failures.Store(0)
			if s.update(l, nc, StateConnected, nil) {
				ev.Emit(Connected{EventTime: ev.Stamp(), URL: Redact(nc.ConnectedUrl()),
					ServerID: nc.ConnectedServerId(), ServerName: nc.ConnectedServerName(), Generation: l.gen})
			}
			callConn(theirs.ConnectedCB, nc)
		}),
		nats.DisconnectErrHandler(s.onDisconnect(l, theirs)),
		nats.ReconnectHandler(func(nc *nats.Conn) {
			l.failures.Store(0)
			s.reconnected(l)
			s.update(l, nc, StateConnected, nil)
			ev.Emit(Reconnected{EventTime: ev.Stamp(), URL: Redact(nc.ConnectedUrl()),
				ServerID: nc.ConnectedServerId(), ServerName: nc.ConnectedServerName(),
				Generation: l.gen, Reconnects: nc.Stats().Reconnects})
			callConn(theirs.ReconnectedCB, nc)
		}),
		nats.ReconnectErrHandler(func(nc *nats.Conn, err error) {
			ev.Emit(ReconnectFailed{EventTime: ev.Stamp(), URL: s.lastURL(), Err: s.redactErr(err),
				Attempt: l.failures.Add(1), Generation: l.gen})
			callConnErr(theirs.ReconnectErrCB, nc, err)
		}),
		nats.ClosedHandler(func(nc *nats.Conn) {
			// Released here, not only when Serve returns, so that Conn stops
			// handing out this connection at once.
			var cause error
			st := StateStopped
			if !l.draining.Load() {
				cause, st = nc.LastError(), StateClosed
			}
			url := s.lastURL()
			s.release(l, st, cause)
			ev.Emit(Closed{EventTime: ev.Stamp(), URL: url, Err: s.redactErr(cause), Generation: l.gen})
			callConn(theirs.ClosedCB, nc)
		}),
		nats.DiscoveredServersHandler(func(nc *nats.Conn) {
			s.learn(l, nc)
			ev.Emit(DiscoveredServers{EventTime: ev.Stamp(), URLs: RedactAll(nc.DiscoveredServers()), Generation: l.gen})
			callConn(theirs.DiscoveredServersCB, nc)
		}),
		nats.LameDuckModeHandler(func(nc *nats.Conn) {
			ev.Emit(LameDuck{EventTime: ev.Stamp(), URL: Redact(nc.ConnectedUrl()), Generation: l.gen})
			callConn(theirs.LameDuckModeHandler, nc)
		}),
		nats.ErrorHandler(s.onAsyncError(l, theirs)),
	}
}

// onDisconnect reports a drop of connection l, or its close.
func (s *Supervisor) onDisconnect(l *live, theirs *nats.Options) nats.ConnErrHandler {
	ev := s.events
	return func(nc *nats.Conn, err error) {
		closing := l.draining.Load() || nc.IsClosed()
		if !closing {
			s.update(l, nc, StateReconnecting, err)
		}
		cause := err
		if cause == nil && !l.draining.Load() {
			// Closed on a drop with reconnect off: nats.go passes no
			// error, but has recorded it.
			cause = nc.LastError()
		}
		ev.Emit(Disconnected{EventTime: ev.Stamp(), URL: s.lastURL(), Err: s.redactErr(cause), Closing: closing, Generation: l.gen})
		callConnErr(theirs.DisconnectedErrCB, nc, err)
		callConn(theirs.DisconnectedCB, nc)
	}
}

// onAsyncError reports an asynchronous error of connection l, and hands
// a subscription's to the dependent that listens for it.
func (s *Supervisor) onAsyncError(l *live, theirs *nats.Options) nats.ErrHandler {
	ev := s.events
	return func(nc *nats.Conn, sub *nats.Subscription, err error) {
		var subject, queue string
		if sub != nil {
			subject, queue = sub.Subject, sub.Queue
		}
		slow := errors.Is(err, nats.ErrSlowConsumer) && sub != nil
		if !slow {
			// Reported before the dependents act on it, so that logs
			// show the cause before its effects.
			ev.Emit(AsyncError{EventTime: ev.Stamp(), URL: s.lastURL(), Subject: subject, Err: s.redactErr(err), Generation: l.gen})
		}
		if !s.listeners.dispatch(nc, sub, err) && slow {
			dropped, _ := sub.Dropped()
			ev.Emit(SlowConsumer{EventTime: ev.Stamp(), Subject: subject, Queue: queue, Dropped: dropped, Generation: l.gen})
		}
		if theirs.AsyncErrorCB != nil {
			theirs.AsyncErrorCB(nc, sub, err)
		}
	}
}

func callConn(cb nats.ConnHandler, nc *nats.Conn) {
	if cb != nil {
		cb(nc)
	}
}

func callConnErr(cb nats.ConnErrHandler, nc *nats.Conn, err error) {
	if cb != nil {
		cb(nc, err)
	}
}
