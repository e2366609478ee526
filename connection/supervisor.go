package connection

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/corral-go/corral/internal/event"
	"github.com/nats-io/nats.go"
)

// Supervisor owns the application's *nats.Conn: it connects, lets nats.go
// reconnect across ordinary outages, turns every state change into an
// event, and when the connection closes for good its Serve returns an error
// so that the tree restarts it and a new connection is made. Dependents
// obtain the connection with Conn, which also tells them when it is
// replaced.
//
// A Supervisor is a suture.Service; all its methods are safe for
// concurrent use.
type Supervisor struct {
	cfg       Config
	events    *event.Emitter
	listeners listeners

	mu      sync.Mutex
	cur     *live // the connection being made or in use; nil between
	gen     uint64
	status  Status
	changed chan struct{} // closed and replaced at every change of cur or status
	// discovered are the servers beyond the seeds in the pool of the
	// connection when it was last up, with the credentials of the URL it
	// was connected to; a replacement dials them after the seeds.
	discovered []string
	// secrets are the credentials in cfg, removed from every error text
	// the supervisor reports (redactErr).
	secrets []string
}

// live is one *nats.Conn and the signal that it closed for good.
type live struct {
	nc       *nats.Conn
	gen      uint64
	seeds    []string // the servers configured, or the embedded one
	closed   chan struct{}
	once     sync.Once
	draining atomic.Bool  // the supervisor asked it to close
	failures atomic.Int64 // failed reconnect attempts since it was last up
}

// New validates cfg and returns a supervisor that connects when served.
func New(cfg Config) (*Supervisor, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg = cfg.withDefaults()
	cfg.Servers = slices.Clone(cfg.Servers)
	cfg.Options = slices.Clone(cfg.Options)
	s := &Supervisor{cfg: cfg, events: event.New(cfg.Events), changed: make(chan struct{}), secrets: secrets(cfg)}
	s.status = Status{State: StateStopped, Since: s.events.Stamp().At}
	return s, nil
}

var _ Source = (*Supervisor)(nil)

// String names the service in the tree.
func (s *Supervisor) String() string { return "connection" }

// Serve connects, to the configured servers and then those discovered
// by earlier connections (Status.Discovered), and supervises the
// connection until ctx ends, then drains it (bounded by DrainTimeout) and
// returns ctx.Err(). If the connection closes for good first (reconnects
// exhausted, authorization revoked, a drop with Reconnect off), it
// returns an error saying why; the tree restarts it, which connects anew.
func (s *Supervisor) Serve(ctx context.Context) error {
	s.mu.Lock()
	s.setStatusLocked(StateConnecting, nil)
	s.mu.Unlock()
	seeds, err := s.seeds(ctx)
	if err != nil {
		s.mu.Lock()
		s.setStatusLocked(StateStopped, nil)
		s.mu.Unlock()
		return err
	}
	l := &live{closed: make(chan struct{}), seeds: seeds}
	s.mu.Lock()
	urls := withDiscovered(seeds, s.discovered)
	s.gen++
	l.gen = s.gen
	s.cur = l
	s.setStatusLocked(StateConnecting, nil)
	s.mu.Unlock()

	// The servers go to nats.go as a list: nats.Connect's URL argument is
	// split at commas, which cuts a password holding one in two.
	opts := append([]nats.Option{servers(urls)}, s.options(l)...)
	nc, err := nats.Connect("", opts...)
	if err != nil {
		err = s.redactErr(err)
		s.release(l, StateClosed, err)
		// Without userinfo: the error is the child's last in Status.
		return fmt.Errorf("connection: connect to %s: %w", strings.Join(allWithoutUserinfo(urls), ","), err)
	}
	s.mu.Lock()
	l.nc = nc
	s.mu.Unlock()

	select {
	case <-ctx.Done():
		s.drain(l)
		s.release(l, StateStopped, nil)
		return ctx.Err()
	case <-l.closed:
		if ctx.Err() != nil {
			s.release(l, StateStopped, nil)
			return ctx.Err()
		}
		cause := s.redactErr(nc.LastError())
		s.release(l, StateClosed, cause)
		if cause == nil {
			return ErrClosed
		}
		return fmt.Errorf("%w: %w", ErrClosed, cause)
	}
}

// seeds returns the configured servers, or waits for the embedded server.
func (s *Supervisor) seeds(ctx context.Context) ([]string, error) {
	seeds := s.cfg.Servers
	switch {
	case len(seeds) > 0:
	case s.cfg.Embedded == nil:
		seeds = []string{nats.DefaultURL}
	default:
		u, err := s.cfg.Embedded.ClientURL(ctx)
		if err != nil {
			return nil, err
		}
		seeds = []string{u}
	}
	return seeds, nil
}

func (s *Supervisor) drain(l *live) {
	l.draining.Store(true)
	s.mu.Lock()
	s.setStatusLocked(StateDraining, nil)
	s.mu.Unlock()
	if err := l.nc.Drain(); err != nil {
		// Not connected (reconnecting or already closing): nothing can be
		// flushed, so close at once.
		l.nc.Close()
	}
	// nats.go bounds the drain by DrainTimeout and then closes; the timer
	// guards against a closed callback that never comes (an application
	// may have turned callbacks off after Close).
	t := time.NewTimer(s.cfg.DrainTimeout + time.Second)
	defer t.Stop()
	select {
	case <-l.closed:
	case <-t.C:
		l.nc.Close()
	}
}

// release records that l is gone and wakes everything waiting on it.
func (s *Supervisor) release(l *live, st State, cause error) {
	l.once.Do(func() { close(l.closed) })
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cur == l {
		s.cur = nil
		s.setStatusLocked(st, cause)
	}
}

// Conn returns the current connection once it is connected, blocking until
// then or until ctx ends. The returned channel is closed when that
// connection has closed for good; a dependent then calls Conn again for
// its replacement. Across ordinary reconnects the same *nats.Conn stays in
// use (nats.go re-subscribes and buffers publishes by itself).
func (s *Supervisor) Conn(ctx context.Context) (*nats.Conn, <-chan struct{}, error) {
	for {
		s.mu.Lock()
		l, st, changed := s.cur, s.status.State, s.changed
		var nc *nats.Conn
		if l != nil {
			nc = l.nc
		}
		s.mu.Unlock()
		if nc != nil && st == StateConnected {
			select {
			case <-l.closed: // gone; its replacement is on the way
			default:
				return nc, l.closed, nil
			}
		}
		select {
		case <-ctx.Done():
			return nil, nil, ctx.Err()
		case <-changed:
		}
	}
}

// ClaimSlowConsumer routes nats.go's slow-consumer errors for sub to
// report instead of a SlowConsumer event, until release is called: a
// handler reports them as part of its own slow-consumer episode.
func (s *Supervisor) ClaimSlowConsumer(sub *nats.Subscription, report func()) (release func()) {
	return s.listeners.claimSlowConsumer(sub, report)
}

// OnAsyncError calls fn with every error nats.go reports asynchronously on
// a supervised connection that belongs to no subscription, such as a
// publish permission violation, until release is called. It is how a
// dependent learns that the server refused a publish: nats.go fails no
// call for it. fn runs on nats.go's callback goroutine and must not block;
// the AsyncError event is emitted as well.
func (s *Supervisor) OnAsyncError(fn func(nc *nats.Conn, err error)) (release func()) {
	return s.listeners.onAsyncError(fn)
}

// Observe returns the current status and a channel closed at its next
// change.
func (s *Supervisor) Observe() (Status, <-chan struct{}) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.snapshotLocked(), s.changed
}

// State returns the connection's state and a channel closed at its next
// change of status: Observe without the figures, whose reading locks the
// nats.go connection that a thousand handlers subscribing contend for.
func (s *Supervisor) State() (State, <-chan struct{}) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.status.State, s.changed
}

// Status returns a snapshot of the connection.
func (s *Supervisor) Status() Status {
	st, _ := s.Observe()
	return st
}

func (s *Supervisor) snapshotLocked() Status {
	st := s.status
	st.Discovered = allWithoutUserinfo(s.discovered)
	if s.cur != nil && s.cur.nc != nil {
		st.Stats = s.cur.nc.Stats()
	}
	return st
}

func (s *Supervisor) setStatusLocked(st State, cause error) {
	if cause != nil {
		s.status.LastError = s.redactErr(cause).Error()
	}
	if s.status.State != st {
		s.status.State = st
		s.status.Since = s.events.Stamp().At
	}
	s.status.Generation = s.gen
	close(s.changed)
	s.changed = make(chan struct{})
}

// update applies a callback's state change if l is still current.
func (s *Supervisor) update(l *live, nc *nats.Conn, st State, cause error) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cur != l {
		return false
	}
	if l.nc == nil {
		l.nc = nc
	}
	if st == StateConnected {
		s.status.URL = withoutUserinfo(nc.ConnectedUrl())
		s.status.ServerID = nc.ConnectedServerId()
		s.status.ServerName = nc.ConnectedServerName()
		s.discovered = discovered(nc, l.seeds)
	}
	s.setStatusLocked(st, cause)
	return true
}

// reconnected counts a reconnection of l, if still current.
func (s *Supervisor) reconnected(l *live) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cur == l {
		s.status.Reconnects++
	}
}

// learn keeps the servers the cluster announced to l, if still current.
func (s *Supervisor) learn(l *live, nc *nats.Conn) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cur != l {
		return
	}
	s.discovered = discovered(nc, l.seeds)
	close(s.changed)
	s.changed = make(chan struct{})
}

func (s *Supervisor) lastURL() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.status.URL
}
