package consumer

import (
	"context"
	"fmt"
	"regexp"
	"sync"

	"github.com/corral-go/corral/connection"
	"github.com/corral-go/corral/internal/event"
	"github.com/corral-go/corral/internal/subject"
	"github.com/corral-go/corral/supervisor"
)

// Group runs every declared handler, each as its own supervised child
// with its own restart policy, pool and counters. Handlers are declared
// before Serve, or while it runs (they start at once), and removed with
// Remove. At shutdown the handlers drain concurrently. Request handlers
// answer the NATS micro protocol too (see [Service]).
//
// A Group is a suture.Service; its methods are safe for concurrent use.
type Group struct {
	src        connection.Source
	events     *event.Emitter
	treeEvents supervisor.Events
	micro      *member // answers the micro protocol

	mu       sync.Mutex
	handlers []*member
	byName   map[string]*member
	services services
	run      *groupRun // while Serve runs
	// unreadyHint is where AllReady last found a handler not ready.
	unreadyHint int
	unstopped   []string

	mw    groupMiddleware // see Use
	flush flusher         // the handlers' subscription round trips
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
	g := &Group{src: src, events: event.New(events), treeEvents: events, byName: map[string]*member{}}
	g.services.byName = map[string]*microService{}
	g.services.changed = make(chan struct{}, 1)
	g.micro = &member{tree: supervisor.NewGroup("consumers", events)}
	_ = g.micro.tree.Add("micro", &responder{g: g}, supervisor.Policy{}) // a new tree and a valid policy: no error
	return g
}

// String names the group in the tree: "consumers".
func (g *Group) String() string { return "consumers" }

var validName = regexp.MustCompile(`^[A-Za-z0-9_-]+$`)

// Handle declares a handler named name that runs h on the messages of
// cfg.Subject, or of cfg.Stream for a JetStream handler. It fails with
// [supervisor.ErrInvalidConfig] for a bad configuration or a name that is not
// letters, digits, '-' and '_' of at most 255 bytes (subject.MaxNameLen:
// by default it names the durable consumer), [ErrDuplicateHandler] for a
// name in use, [ErrNilHandler] for a nil h, and [ErrStopping] while Serve
// stops. Declared while Serve runs, the handler starts at once.
func (g *Group) Handle(name string, cfg Config, h Handler) error {
	if f, ok := h.(HandlerFunc); h == nil || ok && f == nil {
		return fmt.Errorf("consumer: handler %q: %w", name, ErrNilHandler)
	}
	if cfg.Overflow == Reject {
		return fmt.Errorf("consumer: handler %q: %w: overflow: reject answers requests; this handler does not (use HandleRequest)",
			name, supervisor.ErrInvalidConfig)
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
			name, supervisor.ErrInvalidConfig)
	}
	h = g.wrapRequest(h, cfg.Middleware)
	return g.add(name, cfg, nil, func(stats *counters) invoker { return requestInvoker(h, stats) })
}

// add declares a handler; invoke makes its invoker, which may count in the
// handler's counters.
func (g *Group) add(name string, cfg Config, h Handler, invoke func(*counters) invoker) error {
	if !validName.MatchString(name) || len(name) > subject.MaxNameLen {
		return fmt.Errorf("consumer: handler name %q: %w: letters, digits, '-' and '_' only, at most %d bytes (it names the durable consumer)",
			name, supervisor.ErrInvalidConfig, subject.MaxNameLen)
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
	b.name, b.cfg, b.src, b.events, b.stats, b.flush = name, cfg, g.src, g.events, stats, &g.flush
	m := &member{svc: c, tree: supervisor.NewGroup("consumers", g.treeEvents)}
	if err := m.tree.Add(c.String(), c, cfg.Restart); err != nil {
		return fmt.Errorf("consumer: handler %q: %w", name, err)
	}
	if g.run != nil && g.run.stopping {
		return fmt.Errorf("consumer: handler %q: %w", name, ErrStopping)
	}
	if h == nil { // a request handler: an endpoint of its micro service
		if err := g.services.attachLocked(b); err != nil {
			return fmt.Errorf("consumer: handler %q: %w", name, err)
		}
	} else if cfg.Service != (Service{}) {
		return fmt.Errorf("consumer: handler %q: %w: service: only request handlers are micro services", name, supervisor.ErrInvalidConfig)
	}
	g.handlers = append(g.handlers, m)
	g.byName[name] = m
	if g.run != nil {
		g.startMicroLocked()
		g.startLocked(m)
	}
	return nil
}

// Serve runs the handlers, and the micro protocol for the request
// handlers, until ctx ends, then drains them all at once, each within its
// shutdown timeout. It returns ctx.Err(), or an error wrapping
// [supervisor.ErrShutdownIncomplete] naming the handlers that did not
// stop in time.
func (g *Group) Serve(ctx context.Context) error {
	return g.serve(ctx)
}

// Status is a snapshot of one handler.
type Status struct {
	Name       string
	Subject    string
	QueueGroup string
	// Stream and Consumer are set for JetStream handlers, and
	// JetStreamAPI when they are not in the account's own JetStream.
	Stream       string
	Consumer     string
	JetStreamAPI connection.JetStreamAPI `json:",omitzero"`
	Workers      int
	QueueSize    int
	Overflow     Overflow
	// Ready is true while the handler is subscribed on a live connection:
	// messages published from now on reach it. For a request handler, its
	// micro service answers discovery too.
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
	members := append([]*member(nil), g.handlers...)
	g.mu.Unlock()
	out := make([]Status, len(members))
	for i, m := range members {
		svc, c := m.svc, m.svc.base()
		st := Status{
			Name: c.name, Subject: c.cfg.Subject, QueueGroup: c.cfg.QueueGroup,
			Workers: c.cfg.Workers, QueueSize: c.cfg.QueueSize, Overflow: c.cfg.Overflow,
			Stream: c.cfg.Stream, Consumer: c.cfg.Consumer, JetStreamAPI: c.cfg.JetStreamAPI,
			Child: m.tree.Status()[0], Latency: Latency(c.stats.work.Latency()), Ready: g.ready(c),
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

// Children is each handler's place in the tree (Status's Child), in the
// order they were declared, without the rest of their Status.
func (g *Group) Children() []supervisor.ChildStatus {
	g.mu.Lock()
	members := append([]*member(nil), g.handlers...)
	g.mu.Unlock()
	out := make([]supervisor.ChildStatus, len(members))
	for i, m := range members {
		out[i] = m.tree.Status()[0]
	}
	return out
}

// NotReady names the handlers whose Status says they are not Ready, in
// the order they were declared, without taking the rest of their Status.
func (g *Group) NotReady() []string {
	g.mu.Lock()
	members := append([]*member(nil), g.handlers...)
	g.mu.Unlock()
	var names []string
	for _, m := range members {
		if c := m.svc.base(); !g.ready(c) {
			names = append(names, c.name)
		}
	}
	return names
}

// AllReady reports whether every handler is Ready, as NotReady's being
// empty does, without naming any. It starts looking where the last call
// found a handler not ready: handlers become ready roughly in order while
// a Client starts, and a Ready call waking at each of a thousand handlers'
// subscriptions would otherwise walk them all each time.
func (g *Group) AllReady() bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	n := len(g.handlers)
	for i := range n {
		at := (g.unreadyHint + i) % n
		if c := g.handlers[at].svc.base(); !c.ready.Load() || !g.answersLocked(c) {
			g.unreadyHint = at
			return false
		}
	}
	return true
}

// ready reports whether the handler is subscribed, and its service, if it
// is a request handler's, answers.
func (g *Group) ready(c *handlerBase) bool { return c.ready.Load() && g.answers(c) }

// Unstopped names handlers that did not stop in time at the last shutdown.
func (g *Group) Unstopped() []string {
	g.mu.Lock()
	defer g.mu.Unlock()
	return append([]string(nil), g.unstopped...)
}
