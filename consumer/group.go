package consumer

import (
	"context"
	"fmt"
	"regexp"
	"sync"

	"github.com/corral-go/corral/connection"
	"github.com/corral-go/corral/internal/event"
	"github.com/corral-go/corral/supervisor"
)

// Group runs every declared handler, each as its own supervised child
// with its own restart policy, pool and counters. Handlers are declared
// before Serve. At shutdown the handlers drain concurrently.
//
// A Group is a suture.Service; its methods are safe for concurrent use.
type Group struct {
	src    connection.Source
	events *event.Emitter
	tree   *supervisor.Tree

	mu       sync.Mutex
	handlers []service
	byName   map[string]service

	mw groupMiddleware // see Use
}

// service is a handler of either kind, as the tree runs it.
type service interface {
	String() string
	Serve(ctx context.Context) error
	base() *handlerBase
}

// NewGroup returns an empty group whose handlers take their connection
// from src and whose events go where events says.
func NewGroup(src connection.Source, events supervisor.Events) *Group {
	return &Group{src: src, events: event.New(events), tree: supervisor.NewGroup("consumers", events), byName: map[string]service{}}
}

// String names the group in the tree: "consumers".
func (g *Group) String() string { return "consumers" }

var validName = regexp.MustCompile(`^[A-Za-z0-9_-]+$`)

// Handle declares a handler named name that runs h on the messages of
// cfg.Subject, or of cfg.Stream for a JetStream handler. It fails with
// [ErrInvalidConfig] for a bad configuration, [ErrDuplicateHandler] for a
// name in use, [ErrNilHandler] for a nil h, and [supervisor.ErrRunning]
// once Serve runs.
func (g *Group) Handle(name string, cfg Config, h Handler) error {
	if f, ok := h.(HandlerFunc); h == nil || ok && f == nil {
		return fmt.Errorf("consumer: handler %q: %w", name, ErrNilHandler)
	}
	if cfg.Overflow == Reject {
		return fmt.Errorf("consumer: handler %q: %w: overflow: reject answers requests; this handler does not (use HandleRequest)",
			name, ErrInvalidConfig)
	}
	h = g.wrap(h, cfg.Middleware)
	return g.add(name, cfg, h, func(*counters) invoker { return handleInvoker(h) })
}

// HandleRequest declares a request/reply endpoint named name: h's reply,
// or its error as a service error, is sent back to each caller.
func (g *Group) HandleRequest(name string, cfg Config, h RequestHandler) error {
	if f, ok := h.(RequestFunc); h == nil || ok && f == nil {
		return fmt.Errorf("consumer: handler %q: %w", name, ErrNilHandler)
	}
	if cfg.IsJetStream() {
		return fmt.Errorf("consumer: handler %q: %w: stream: a request handler answers core requests; JetStream handlers use Handle",
			name, ErrInvalidConfig)
	}
	h = g.wrapRequest(h, cfg.Middleware)
	return g.add(name, cfg, nil, func(stats *counters) invoker { return requestInvoker(h, &stats.clientErrors) })
}

// add declares a handler; invoke makes its invoker, which may count in the
// handler's counters.
func (g *Group) add(name string, cfg Config, h Handler, invoke func(*counters) invoker) error {
	if !validName.MatchString(name) {
		return fmt.Errorf("consumer: handler name %q: %w: letters, digits, '-' and '_' only", name, ErrInvalidConfig)
	}
	if err := cfg.Validate(); err != nil {
		return fmt.Errorf("consumer: handler %q: %w", name, err)
	}
	cfg = cfg.withDefaults()
	if cfg.IsJetStream() && cfg.Consumer == "" {
		cfg.Consumer = name
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if _, dup := g.byName[name]; dup {
		return fmt.Errorf("consumer: handler %q: %w", name, ErrDuplicateHandler)
	}
	stats := &counters{}
	var c service
	if cfg.IsJetStream() {
		c = &jsHandler{h: h}
	} else {
		c = &coreHandler{invoke: invoke(stats)}
	}
	b := c.base()
	b.name, b.cfg, b.src, b.events, b.stats = name, cfg, g.src, g.events, stats
	if err := g.tree.Add(c.String(), c, cfg.Restart); err != nil { // supervisor.ErrRunning once serving
		return fmt.Errorf("consumer: handler %q: %w", name, err)
	}
	g.handlers = append(g.handlers, c)
	g.byName[name] = c
	return nil
}

// Serve runs the handlers until ctx ends, then drains them all at once,
// each within its shutdown timeout.
func (g *Group) Serve(ctx context.Context) error {
	return g.tree.Serve(ctx)
}

// Status is a snapshot of one handler.
type Status struct {
	Name       string
	Subject    string
	QueueGroup string
	// Stream and Consumer are set for JetStream handlers.
	Stream    string
	Consumer  string
	Workers   int
	QueueSize int
	Overflow  Overflow
	// Ready is true while the handler is subscribed on a live connection:
	// messages published from now on reach it.
	Ready bool
	// Child is the handler's state in the tree.
	Child    supervisor.ChildStatus
	Counters Counters
	Latency  Latency
	// SlowConsumer is true during a slow-consumer episode, from
	// SlowConsumerStarted to SlowConsumerEnded.
	SlowConsumer bool
	// AckPending and MaxAckPending are, for JetStream handlers, the
	// consumer's unacknowledged messages (all instances') and its limit, as
	// last read (every 5s); NearMaxAckPending is true from AckPendingHigh
	// to AckPendingNormal.
	AckPending, MaxAckPending int
	NearMaxAckPending         bool
}

// Status returns a snapshot of every handler, in the order declared.
func (g *Group) Status() []Status {
	g.mu.Lock()
	handlers := append([]service(nil), g.handlers...)
	g.mu.Unlock()
	children := map[string]supervisor.ChildStatus{}
	for _, cs := range g.tree.Status() {
		children[cs.Name] = cs
	}
	out := make([]Status, len(handlers))
	for i, svc := range handlers {
		c := svc.base()
		st := Status{
			Name: c.name, Subject: c.cfg.Subject, QueueGroup: c.cfg.QueueGroup,
			Workers: c.cfg.Workers, QueueSize: c.cfg.QueueSize, Overflow: c.cfg.Overflow,
			Stream: c.cfg.Stream, Consumer: c.cfg.Consumer,
			Child: children[c.String()], Latency: Latency(c.stats.work.Latency()), Ready: c.ready.Load(),
		}
		if v := c.current.Load(); v != nil {
			st.Counters, st.SlowConsumer = v.snapshot(c.stats), v.slow.active.Load()
		}
		if j, ok := svc.(*jsHandler); ok {
			st.AckPending, st.MaxAckPending = int(j.ackPending.Load()), int(j.maxAckPending.Load())
			st.NearMaxAckPending = j.nearMaxAckPending.Load()
		}
		out[i] = st
	}
	return out
}

// Unstopped names handlers that did not stop in time at the last shutdown.
func (g *Group) Unstopped() []string { return g.tree.Unstopped() }
