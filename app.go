package corral

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/thejerf/suture/v4"

	"github.com/corral-go/corral/connection"
	"github.com/corral-go/corral/consumer"
	"github.com/corral-go/corral/embedded"
	"github.com/corral-go/corral/internal/conf"
	"github.com/corral-go/corral/publisher"
	"github.com/corral-go/corral/supervisor"
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
	events    supervisor.Events
	tree      *supervisor.Tree
	server    *embedded.Server
	conn      *connection.Supervisor
	pub       *publisher.Buffered
	consumers *consumer.Group
	watchers  *supervisor.Tree

	mu             sync.Mutex
	bound          map[string]bool // handler names bound by code
	consumersAdded bool
	watchersAdded  bool
	serving        bool
}

// New validates cfg, reporting every problem at once (an error wrapping
// ErrInvalidConfig), and builds the tree. Nothing connects until Run.
func New(cfg Config, opts ...Option) (*Client, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	var o options
	for _, opt := range opts {
		opt(&o)
	}
	if cfg.Name == "" {
		cfg.Name = "corral"
	}
	events := supervisor.Events{Logger: o.logger, Hook: o.hook, Clock: o.now}
	c := &Client{cfg: cfg, events: events, tree: supervisor.NewTree(cfg.Name, events), bound: map[string]bool{}}

	// Children stop in reverse order of adding: the connection drains
	// before the embedded server stops.
	if len(cfg.Connection.Servers) == 0 {
		sc := cfg.Server
		sc.Events = events
		srv, err := embedded.New(sc)
		if err != nil {
			return nil, err
		}
		if err := c.tree.Add(srv.String(), srv, sc.Restart.Inherit(cfg.Restart)); err != nil {
			return nil, err
		}
		c.server = srv
	}
	cc := cfg.Connection
	if cc.Name == "" {
		cc.Name = cfg.Name
	}
	cc.Events = events
	if c.server != nil {
		cc.Embedded = c.server
	}
	cc.Options = append(append([]nats.Option(nil), cc.Options...), o.nats...)
	conn, err := connection.New(cc)
	if err != nil {
		return nil, err
	}
	policy := cc.Restart.Inherit(cfg.Restart)
	if policy.ShutdownTimeout == 0 {
		policy.ShutdownTimeout = cc.MinShutdownTimeout()
	}
	if err := c.tree.Add(conn.String(), conn, policy); err != nil {
		return nil, err
	}
	c.conn = conn

	pc := cfg.Publisher
	pc.Events = events
	pc.Restart = pc.Restart.Inherit(cfg.Restart)
	pub, err := publisher.New(pc, conn)
	if err != nil {
		return nil, err
	}
	if err := c.tree.Add(pub.String(), pub, pc.Restart); err != nil {
		_ = pub.Close() // releases the spool directory's lock
		return nil, err
	}
	c.pub = pub

	// Handlers and watches join the tree at Run, after the publisher: they
	// stop first, and what they publish while stopping is still flushed.
	c.consumers = consumer.NewGroup(conn, events)
	c.watchers = supervisor.NewGroup("watchers", events)
	return c, nil
}

// consumersPolicy is the policy of the consumer supervisor: it never fails
// by itself (its handlers have their own policies) and must be given the
// longest handler shutdown timeout to drain them all.
func (c *Client) consumersPolicy(longest time.Duration) supervisor.Policy {
	p := c.cfg.Restart.Inherit(supervisor.Defaults())
	p.Mode = supervisor.Permanent
	p.ShutdownTimeout = max(p.ShutdownTimeout, longest) + time.Second
	return p
}

// Handle binds h to the handler named name, as consumer.Group.Handle
// does. Its settings are cfg, declared in code (the zero Config when they
// all come from the file), overridden by Config.Handlers[name]: a key the
// file or the environment sets wins, false and zero included, so a file
// retunes workers, queues and policies without a code change. Handle fails
// with a clear error when the subject or any setting is invalid, the name
// is already bound, or the name is neither in the configuration nor given
// settings here. Declare handlers before Run.
func (c *Client) Handle(name string, cfg consumer.Config, h consumer.Handler) error {
	return c.declare(name, cfg, func(hc consumer.Config) error { return c.consumers.Handle(name, hc, h) })
}

// HandleRequest binds a request/reply endpoint, as Handle does: h's reply,
// or its error as a service error, goes back to each caller.
func (c *Client) HandleRequest(name string, cfg consumer.Config, h consumer.RequestHandler) error {
	return c.declare(name, cfg, func(hc consumer.Config) error { return c.consumers.HandleRequest(name, hc, h) })
}

func (c *Client) declare(name string, hc consumer.Config, add func(consumer.Config) error) error {
	file, inFile := c.cfg.Handlers[name]
	if !inFile && reflect.ValueOf(hc).IsZero() {
		return fmt.Errorf("handler %q: %w", name, ErrUnknownHandler)
	}
	if inFile {
		conf.Override(&hc, file, c.cfg.keys.Under("handlers."+name))
	}
	hc.Restart = hc.Restart.Inherit(c.cfg.Restart)
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.serving {
		return fmt.Errorf("corral: handler %q: %w: declare handlers before Run", name, ErrRunning)
	}
	if err := add(hc); err != nil {
		return err
	}
	c.bound[name] = true
	return nil
}

// addDeclared puts the consumer supervisor and the watchers in the tree,
// after everything they depend on, once handlers and watches are
// declared; each one's shutdown timeout covers the longest of its
// children's.
func (c *Client) addDeclared() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if handlers := c.consumers.Status(); len(handlers) > 0 {
		p := c.consumersPolicy(longestShutdown(handlers))
		if err := c.addOnce(&c.consumersAdded, c.consumers, p); err != nil {
			return err
		}
	}
	if len(c.watchers.Status()) > 0 {
		return c.addOnce(&c.watchersAdded, c.watchers, c.watchersPolicy())
	}
	return nil
}

func (c *Client) addOnce(added *bool, svc suture.Service, p supervisor.Policy) error {
	name := fmt.Sprint(svc)
	if *added {
		return c.tree.SetPolicy(name, p)
	}
	if err := c.tree.Add(name, svc, p); err != nil {
		return err
	}
	*added = true
	return nil
}

// unbound lists handlers configured but never bound by code.
func (c *Client) unbound() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []string
	for name := range c.cfg.Handlers {
		if !c.bound[name] {
			out = append(out, name)
		}
	}
	slices.Sort(out)
	return out
}

// String is the Client's name, as suture shows it.
func (c *Client) String() string { return c.cfg.Name }

// Serve runs the tree until ctx ends, then stops it in order: dependents
// first, the connection drained last, each child within its shutdown
// timeout. It returns ctx.Err() after a clean stop (the suture.Service
// contract), or an error wrapping ErrShutdownIncomplete.
func (c *Client) Serve(ctx context.Context) error {
	if names := c.unbound(); len(names) > 0 {
		// A configuration mistake: restarting will not mend it.
		return errors.Join(fmt.Errorf("%w: %s", ErrUnboundHandler, strings.Join(names, ", ")), suture.ErrDoNotRestart)
	}
	if err := c.addDeclared(); err != nil {
		return err
	}
	c.mu.Lock()
	c.serving = true
	c.mu.Unlock()
	defer func() {
		c.mu.Lock()
		c.serving = false
		c.mu.Unlock()
	}()
	return c.tree.Serve(ctx)
}

// ShutdownTimeout bounds how long Serve takes to return once its ctx ends:
// children stop one after another, each within its own timeout. Give an
// application supervisor that runs the Client at least this as its
// suture.Spec.Timeout.
func (c *Client) ShutdownTimeout() time.Duration {
	var total time.Duration
	for _, ch := range c.tree.Status() {
		total += ch.Policy.ShutdownTimeout + time.Second
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.consumersAdded {
		if handlers := c.consumers.Status(); len(handlers) > 0 {
			total += c.consumersPolicy(longestShutdown(handlers)).ShutdownTimeout + time.Second
		}
	}
	if !c.watchersAdded && len(c.watchers.Status()) > 0 {
		total += c.watchersPolicy().ShutdownTimeout + time.Second
	}
	return total
}

func longestShutdown(handlers []consumer.Status) time.Duration {
	var longest time.Duration
	for _, st := range handlers {
		longest = max(longest, st.Child.Policy.ShutdownTimeout)
	}
	return longest
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
// again. It fails with publisher.ErrServing while the Client runs.
func (c *Client) Close() error { return c.pub.Close() }

// Conn returns the live connection, waiting until it is connected or ctx
// ends. It is the escape hatch to everything nats.go does; the Client
// replaces the connection if it closes for good, so do not keep it across
// such a replacement: ask again, or use Connection().Conn, which says when.
func (c *Client) Conn(ctx context.Context) (*nats.Conn, error) {
	nc, _, err := c.conn.Conn(ctx)
	return nc, err
}

// Connection is the connection supervisor, for dependents that follow the
// connection across replacements.
func (c *Client) Connection() *connection.Supervisor { return c.conn }

// Publisher is the buffered publisher.
func (c *Client) Publisher() *publisher.Buffered { return c.pub }

// Publish accepts a message for a JetStream stream into the buffered
// publisher and returns once it is buffered, with the Future of its ack;
// see publisher.Buffered.Publish. It works before the connection is up:
// the message is sent when it is.
func (c *Client) Publish(ctx context.Context, subject string, data []byte, opts ...publisher.Option) (*publisher.Future, error) {
	return c.pub.Publish(ctx, subject, data, opts...)
}

// PublishSync publishes through the buffer and waits for the stream's ack.
func (c *Client) PublishSync(ctx context.Context, subject string, data []byte, opts ...publisher.Option) (*jetstream.PubAck, error) {
	return c.pub.PublishSync(ctx, subject, data, opts...)
}

// PublishCore publishes on core NATS: at most once, with no ack and no
// buffer of Corral's (only nats.go's reconnect buffer, while reconnecting).
// It waits for the connection until ctx ends.
func (c *Client) PublishCore(ctx context.Context, subject string, data []byte) error {
	nc, err := c.Conn(ctx)
	if err != nil {
		return err
	}
	return nc.Publish(subject, data)
}

// Status is a snapshot of a Client.
type Status struct {
	Name string
	// Children is every child of the tree, in start order.
	Children []supervisor.ChildStatus
	// Connection is the connection's state.
	Connection connection.Status
	// Publisher is the buffered publisher's state.
	Publisher publisher.Status
	// Handlers is every declared handler, with its counters.
	Handlers []consumer.Status
	// Watches is every declared watch.
	Watches []supervisor.ChildStatus
	// Unstopped names children that did not stop in time at the last
	// shutdown.
	Unstopped []string
}

// Status returns a snapshot of the tree and the connection.
func (c *Client) Status() Status {
	return Status{
		Name:       c.cfg.Name,
		Children:   c.tree.Status(),
		Connection: c.conn.Status(),
		Publisher:  c.pub.Status(),
		Handlers:   c.consumers.Status(),
		Watches:    c.watchers.Status(),
		Unstopped:  slices.Concat(c.tree.Unstopped(), c.consumers.Unstopped(), c.watchers.Unstopped()),
	}
}

// String draws the tree, one child a line.
func (s Status) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s\n", s.Name)
	for i, ch := range s.Children {
		fmt.Fprintf(&b, "%s %-12s %-11s restarts=%d since=%s", twig(i, len(s.Children)), ch.Name, ch.State, ch.Restarts, ch.Since.Format(time.TimeOnly))
		switch ch.Name {
		case "connection":
			fmt.Fprintf(&b, " conn=%s", s.Connection.State)
			if s.Connection.URL != "" {
				fmt.Fprintf(&b, " url=%s", s.Connection.URL)
			}
		case "publisher":
			p := s.Publisher
			fmt.Fprintf(&b, " buffered=%d in_flight=%d published=%d acked=%d retried=%d failed=%d",
				p.Buffered, p.InFlight, p.Published, p.Acked, p.Retried, p.Failed)
		}
		if ch.LastError != "" {
			fmt.Fprintf(&b, " last_error=%q", ch.LastError)
		}
		b.WriteByte('\n')
		indent := "│   "
		if i == len(s.Children)-1 {
			indent = "    "
		}
		switch ch.Name {
		case "consumers":
			s.drawHandlers(&b, indent)
		case "watchers":
			for j, w := range s.Watches {
				fmt.Fprintf(&b, "%s%s %-12s %-11s restarts=%d", indent, twig(j, len(s.Watches)), w.Name, w.State, w.Restarts)
				if w.LastError != "" {
					fmt.Fprintf(&b, " last_error=%q", w.LastError)
				}
				b.WriteByte('\n')
			}
		}
	}
	return b.String()
}

func (s Status) drawHandlers(b *strings.Builder, indent string) {
	for j, h := range s.Handlers {
		cn := h.Counters
		fmt.Fprintf(b, "%s%s %-12s %-11s restarts=%d", indent, twig(j, len(s.Handlers)), h.Name, h.Child.State, h.Child.Restarts)
		if h.Stream != "" {
			fmt.Fprintf(b, " stream=%s consumer=%s workers=%d held=%d/%d received=%d acked=%d naked=%d dead_lettered=%d",
				h.Stream, h.Consumer, h.Workers, cn.InFlight+int64(cn.QueueDepth), h.Workers+h.QueueSize,
				cn.Received, cn.Acked, cn.Naked, cn.DeadLettered)
		} else {
			fmt.Fprintf(b, " subject=%s workers=%d queue=%d/%d received=%d processed=%d failed=%d dropped=%d",
				h.Subject, h.Workers, cn.QueueDepth, h.QueueSize, cn.Received, cn.Processed, cn.Failed, cn.Dropped)
		}
		if h.SlowConsumer {
			b.WriteString(" slow_consumer")
		}
		b.WriteByte('\n')
	}
}

// twig is the branch drawn before item j of n.
func twig(j, n int) string {
	if j == n-1 {
		return "└──"
	}
	return "├──"
}
