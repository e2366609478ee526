package consumer

import (
	"context"
	"fmt"
	"regexp"
	"sync"
	"sync/atomic"

	"github.com/corral-go/corral/supervisor"
)

// Supervisor runs every declared handler, each as its own supervised child
// with its own restart policy, pool and counters. Handlers are declared
// before Serve. At shutdown the handlers drain concurrently.
//
// It is a suture.Service; its methods are safe for concurrent use.
type Supervisor struct {
	conns  Conns
	events *supervisor.Events
	tree   *supervisor.Tree

	mu       sync.Mutex
	handlers []*core
	byName   map[string]*core
}

// New returns a supervisor whose handlers take their connection from
// conns and report to events (nil: nowhere).
func New(conns Conns, events *supervisor.Events) *Supervisor {
	if events == nil {
		events = supervisor.NewEvents(nil, nil, nil)
	}
	return &Supervisor{conns: conns, events: events, tree: supervisor.NewGroup("consumers", events), byName: map[string]*core{}}
}

// String names the service in the tree.
func (s *Supervisor) String() string { return "consumers" }

var validName = regexp.MustCompile(`^[A-Za-z0-9_-]+$`)

// Handle declares a handler named name that runs h on the messages of
// cfg.Subject. It fails with ErrInvalidConfig for a bad configuration,
// ErrDuplicateHandler for a name in use, and ErrRunning once Serve runs.
func (s *Supervisor) Handle(name string, cfg Config, h Handler) error {
	if h == nil {
		return fmt.Errorf("consumer: handler %q: %w", name, ErrNilHandler)
	}
	return s.add(name, cfg, false, handleInvoker(h))
}

// HandleRequest declares a request/reply endpoint named name: h's reply,
// or its error as a service error, is sent back to each caller.
func (s *Supervisor) HandleRequest(name string, cfg Config, h RequestHandler) error {
	if h == nil {
		return fmt.Errorf("consumer: handler %q: %w", name, ErrNilHandler)
	}
	return s.add(name, cfg, true, requestInvoker(h))
}

func (s *Supervisor) add(name string, cfg Config, request bool, invoke invoker) error {
	if !validName.MatchString(name) {
		return fmt.Errorf("consumer: handler name %q: %w: letters, digits, '-' and '_' only", name, ErrInvalidConfig)
	}
	if err := cfg.Validate(request); err != nil {
		return fmt.Errorf("consumer: handler %q: %w", name, err)
	}
	cfg = cfg.withDefaults()
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, dup := s.byName[name]; dup {
		return fmt.Errorf("consumer: handler %q: %w", name, ErrDuplicateHandler)
	}
	c := &core{name: name, cfg: cfg, conns: s.conns, events: s.events, stats: &counters{}, invoke: invoke}
	if err := s.tree.Add(c.String(), c, cfg.Restart); err != nil {
		return fmt.Errorf("consumer: handler %q: %w", name, err)
	}
	s.handlers = append(s.handlers, c)
	s.byName[name] = c
	return nil
}

// Serve runs the handlers until ctx ends, then drains them all at once,
// each within its shutdown timeout.
func (s *Supervisor) Serve(ctx context.Context) error {
	return s.tree.Serve(ctx)
}

// Status is a snapshot of one handler.
type Status struct {
	Name       string
	Subject    string
	QueueGroup string
	Workers    int
	QueueSize  int
	Overflow   Overflow
	// Ready is true while the handler is subscribed on a live connection:
	// messages published from now on reach it.
	Ready bool
	// Child is the handler's state in the tree.
	Child        supervisor.ChildStatus
	Counters     Counters
	Latency      Latency
	SlowConsumer bool
}

// Status returns a snapshot of every handler, in the order declared.
func (s *Supervisor) Status() []Status {
	s.mu.Lock()
	handlers := append([]*core(nil), s.handlers...)
	s.mu.Unlock()
	children := map[string]supervisor.ChildStatus{}
	for _, cs := range s.tree.Status() {
		children[cs.Name] = cs
	}
	out := make([]Status, len(handlers))
	for i, c := range handlers {
		st := Status{
			Name: c.name, Subject: c.cfg.Subject, QueueGroup: c.cfg.QueueGroup,
			Workers: c.cfg.Workers, QueueSize: c.cfg.QueueSize, Overflow: c.cfg.Overflow,
			Child: children[c.String()], Latency: c.stats.latency.snapshot(), Ready: c.ready.Load(),
		}
		if p := c.current.Load(); p != nil {
			st.Counters, st.SlowConsumer = p.snapshot(), p.episodeActive.Load()
		}
		out[i] = st
	}
	return out
}

// Unstopped names handlers that did not stop in time at the last shutdown.
func (s *Supervisor) Unstopped() []string { return s.tree.Unstopped() }

type atomicPool = atomic.Pointer[pool]
