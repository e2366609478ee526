package corral

import (
	"context"
	"errors"
	"maps"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/corral-go/corral/connection"
	"github.com/corral-go/corral/consumer"
	"github.com/corral-go/corral/fleet"
	"github.com/corral-go/corral/internal/conf"
	"github.com/corral-go/corral/kv"
	"github.com/corral-go/corral/objectstore"
	"github.com/corral-go/corral/publisher"
	"github.com/corral-go/corral/stream"
	"github.com/corral-go/corral/supervisor"
	"github.com/corral-go/corral/tasks"
)

// Client is the application's one handle on NATS: a supervision tree that
// keeps a connection alive (to the embedded server or the configured ones)
// and the single interface the application calls.
//
// A Client is a suture.Service, so it can run under an application's own
// tree; Run is the same for a main function. Its methods are safe for
// concurrent use.
type Client struct {
	cfg       Config
	streams   map[string]stream.Config           // cfg.declaredStreams(), read by every Handle
	apis      map[string]connection.JetStreamAPI // cfg.streamAPIs(): the JetStream of each of streams
	events    supervisor.Events
	tree      *supervisor.Tree
	server    EmbeddedServer // nil when servers are configured
	conn      *connection.Supervisor
	pub       *publisher.Buffered
	consumers *consumer.Group
	tasks     *supervisor.Tree
	watchers  *supervisor.Tree
	tracer    Tracer    // nil without WithTracer
	ops       *opsChild // nil without WithOps
	identity  fleet.Identity
	discovery *fleet.Responder // nil when discovery is off

	mu      sync.Mutex
	handles handles
	bound   map[string]bool // handler names bound by code
	workers map[string]*tasks.Worker
	groups  []*group // in the order they join the tree
	serving bool
	// phase is read on every core publish, without c.mu; it is replaced
	// under c.mu.
	phase  atomic.Pointer[runPhase]
	ready  *readiness
	synced map[string]<-chan struct{} // a watch's Synced, by its name
}

// New validates cfg, reporting every problem at once (an error wrapping
// ErrInvalidConfig), and builds the tree. Nothing connects until Run.
func New(cfg Config, opts ...Option) (*Client, error) {
	var o options
	for _, opt := range opts {
		opt(&o)
	}
	if err := cfg.validate(o, true); err != nil {
		return nil, err
	}
	if cfg.Name == "" {
		cfg.Name = defaultName
	}
	ready := newReadiness()
	events := supervisor.Events{Logger: o.logger, Hook: ready.hook(o.hook), Clock: o.now}
	c := &Client{cfg: cfg, streams: cfg.declaredStreams(), apis: cfg.streamAPIs(conf.NewProblems("")), events: events,
		tree: supervisor.NewTree(cfg.Name, events), bound: map[string]bool{},
		workers: map[string]*tasks.Worker{}, ready: ready, synced: map[string]<-chan struct{}{},
		handles: handles{buckets: map[string]*kv.Bucket[[]byte]{}, stores: map[string]*objectstore.Store{}, locks: map[string]*kv.Lock{}}}
	c.phase.Store(&runPhase{done: make(chan struct{})})
	// The ops listener is added first so that it stops last: health and
	// status answer through a shutdown.
	if err := c.addOps(o.ops); err != nil {
		return nil, err
	}

	// Children stop in reverse order of adding: the publisher flushes
	// before the connection drains, which drains before the embedded
	// server stops.
	if err := c.addConnection(o.server, o.nats); err != nil {
		return nil, err
	}
	if err := c.addPublisher(); err != nil {
		return nil, err
	}
	// After the publisher: it stops before it.
	if err := c.addDiscovery(); err != nil {
		_ = c.pub.Close()
		return nil, err
	}
	// Handlers and watches join the tree at Run, after the publisher: they
	// stop first, and what they publish while stopping is still flushed.
	c.consumers = consumer.NewGroup(c.conn, events)
	c.useTracer(o.tracer)
	c.tasks = supervisor.NewGroup("tasks", events)
	c.watchers = supervisor.NewGroup("watchers", events)
	c.groups = []*group{
		{svc: c.consumers, children: c.consumers.Children},
		{svc: c.tasks, children: c.tasks.Status},
		{svc: c.watchers, children: c.watchers.Status},
	}
	if err := c.buildOps(o.ops); err != nil {
		_ = c.pub.Close()
		return nil, err
	}
	return c, nil
}

// addConnection adds the embedded server (when no server is configured)
// and the connection supervisor to the tree.
func (c *Client) addConnection(startServer func(ServerConfig) (EmbeddedServer, error), extra []nats.Option) error {
	cfg := c.cfg
	if len(cfg.Connection.Servers) == 0 {
		sc := cfg.Server
		sc.Events = c.events
		srv, err := startServer(sc)
		if err != nil {
			return err
		}
		if err := c.tree.Add(srv.String(), srv, sc.Restart.Inherit(cfg.Restart)); err != nil {
			return err
		}
		c.server = srv
	}
	cc := cfg.Connection
	if cc.Name == "" {
		cc.Name = cfg.Name
	}
	cc.Events = c.events
	if c.server != nil {
		cc.Embedded = c.server
	}
	cc.Options = append(append([]nats.Option(nil), cc.Options...), extra...)
	conn, err := connection.New(cc)
	if err != nil {
		return err
	}
	policy := cc.Restart.Inherit(cfg.Restart)
	if cc.Restart.ShutdownTimeout == 0 {
		// Inherited or default: never shorter than the drain needs. Its
		// own, Validate has checked.
		policy.ShutdownTimeout = max(policy.ShutdownTimeout, cc.MinShutdownTimeout())
	}
	if err := c.tree.Add(conn.String(), conn, policy); err != nil {
		return err
	}
	c.conn = conn
	return nil
}

// addPublisher adds the buffered publisher to the tree; it declares every
// stream of the configuration and those of the task queues.
func (c *Client) addPublisher() error {
	pc := c.cfg.Publisher
	pc.Events = c.events
	pc.Restart = pc.Restart.Inherit(c.cfg.Restart)
	pc.JetStreamAPI = c.cfg.publisherAPI()
	pc.Streams = maps.Clone(c.cfg.taskStreams(c.streams))
	maps.DeleteFunc(pc.Streams, func(name string, _ stream.Config) bool { return c.apis[name] != pc.JetStreamAPI })
	pub, err := publisher.New(pc, c.conn)
	if err != nil {
		return err
	}
	if err := c.tree.Add(pub.String(), pub, pc.Restart); err != nil {
		_ = pub.Close() // releases the spool directory's lock
		return err
	}
	c.pub = pub
	return nil
}

// String is the Client's name, as suture shows it.
func (c *Client) String() string { return c.cfg.Name }

// Serve runs the tree until ctx ends, then stops it in order: dependents
// first, the connection drained last, each child within its shutdown
// timeout. It returns ctx.Err() after a clean stop (the suture.Service
// contract), or an error wrapping ErrShutdownIncomplete. Before any child
// starts, it fails with an error wrapping ErrUnboundHandler, naming each
// handler of Config.Handlers that code never bound; the error also
// matches suture.ErrDoNotRestart, as only a change of code or
// configuration mends it.
func (c *Client) Serve(ctx context.Context) error {
	if names := c.unbound(); len(names) > 0 {
		err := &unboundError{names: names}
		c.ready.began()
		c.ready.ended(err, true)
		return err
	}
	if err := c.addDeclared(); err != nil {
		if !errors.Is(err, ErrRunning) { // a run that failed, not a second one
			c.ready.began()
			c.ready.ended(err, true)
		}
		return err
	}
	c.ready.began()
	err := c.incomplete(ctx, c.serveTree(ctx))
	c.mu.Lock()
	c.serving = false
	c.nextPhaseLocked(true)
	c.mu.Unlock()
	c.ready.ended(err, ctx.Err() == nil)
	return err
}

// ShutdownTimeout bounds how long Serve takes to return once its ctx ends:
// children stop one after another, each within its own timeout. Give an
// application supervisor that runs the Client at least this as its
// suture.Spec.Timeout.
func (c *Client) ShutdownTimeout() time.Duration {
	total := c.pendingShutdown()
	for _, ch := range c.tree.Status() {
		total += ch.Policy.ShutdownTimeout + time.Second
	}
	return total
}

// Run is Serve for a main function: it returns nil when ctx ended and
// everything stopped in time.
func (c *Client) Run(ctx context.Context) error {
	err := c.Serve(ctx)
	if ctx.Err() != nil && errors.Is(err, ctx.Err()) && !errors.Is(err, ErrShutdownIncomplete) {
		return nil
	}
	return err
}

// Close releases what New took for a Client that is not running: the
// publisher's spool directory, whose messages stay there for the next
// Client, or, without a spool, are reported undelivered. Run releases them
// by itself when it returns; Close is for a Client never run, or not run
// again. It fails with publisher.ErrServing while the Client runs, from
// the moment Serve begins, whether or not the publisher has started yet.
func (c *Client) Close() error {
	c.mu.Lock()
	serving := c.serving
	c.mu.Unlock()
	if serving {
		return publisher.ErrServing
	}
	return c.pub.Close()
}

// runPhase is a span of the Client's life: before its first Run or while
// one runs, or stopped once a Run has returned, until the next begins.
// done is closed when it ends.
type runPhase struct {
	done    chan struct{}
	stopped bool
}

// nextPhaseLocked starts the next phase, stopped after a Run, running at
// its start, and wakes the calls waiting on the one it ends. c.mu is held.
func (c *Client) nextPhaseLocked(stopped bool) {
	old := c.phase.Swap(&runPhase{done: make(chan struct{}), stopped: stopped})
	close(old.done)
}

// currentPhase returns the current phase, or ErrNotRunning once a Run has
// returned, until the next begins.
func (c *Client) currentPhase() (*runPhase, error) {
	p := c.phase.Load()
	if p.stopped {
		return nil, ErrNotRunning
	}
	return p, nil
}
