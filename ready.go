package corral

import (
	"context"
	"fmt"
	"strings"
	"sync"

	"github.com/corral-go/corral/connection"
	"github.com/corral-go/corral/supervisor"
	"github.com/corral-go/corral/tasks"
)

// Ready waits until everything declared is ready: the connection is up,
// the publisher has declared its streams, every handler is subscribed (or
// pulls from its consumer), every task queue's worker holds its lease and
// every watch runs, and a kv or object-store watch has delivered what the
// bucket held: from then on, what is published reaches its handler and a
// change reaches its watch. It waits for Run (or Serve) to begin if it has
// not. It spends nothing while it waits: it wakes at each change the tree
// reports.
//
// Ready fails with an error wrapping ErrNotReady: when ctx ends first (the
// error also wraps ctx.Err() and names what is not ready yet), and when
// Run returns before everything was ready, or had returned with an error
// when Ready was called (the error wraps what Run returned). A Client that
// stopped cleanly is waited for until it runs again.
//
// Ready is safe for concurrent use and starts no goroutine. Being ready
// is a moment: a child may stop being ready later (a reconnect, a
// restart); Status says what is ready now.
func (c *Client) Ready(ctx context.Context) error {
	c.ready.mu.Lock()
	before := c.ready.runs // runs that ended before this call
	if c.ready.running {
		before--
	}
	c.ready.mu.Unlock()
	for {
		// The channels first: a change after them closes one of them.
		r := c.ready.snapshot()
		conn, connChanged := c.conn.State()
		pub, pubChanged := c.pub.Observe()
		switch {
		case r.running:
		case r.runs > before:
			return fmt.Errorf("%w: Run returned: %w", ErrNotReady, r.lastErr)
		case r.failed:
			return fmt.Errorf("%w: Run failed: %w", ErrNotReady, r.lastErr)
		}
		pending, syncing := c.pending(r, conn, pub.Ready, false)
		if len(pending) == 0 {
			return nil
		}
		select {
		case <-ctx.Done():
			conn, _ := c.conn.State()
			if named, _ := c.pending(c.ready.snapshot(), conn, c.pub.Status().Ready, true); len(named) > 0 {
				pending = named
			}
			return fmt.Errorf("%w: waiting for %s: %w", ErrNotReady, strings.Join(pending, ", "), ctx.Err())
		case <-r.changed:
		case <-connChanged:
		case <-pubChanged:
		case <-syncing:
		}
	}
}

// pending names what is not ready, and returns the Synced channel of the
// first watch that has not delivered what its bucket held: nothing else
// says when it has. Unless describe, the handlers not ready are named as
// one: Ready asks at every change, and a thousand handlers starting would
// make it format a million names.
func (c *Client) pending(r readySnapshot, conn connection.State, pubReady, describe bool) (names []string, syncing <-chan struct{}) {
	if !r.running {
		return []string{"Run"}, nil
	}
	if conn != connection.StateConnected {
		names = append(names, "connection ("+string(conn)+")")
	}
	if !pubReady {
		names = append(names, "publisher")
	}
	if c.discovery != nil && !c.discovery.Answering() {
		names = append(names, "discovery")
	}
	if c.ops != nil && c.ops.server != nil && c.ops.server.Addr() == "" {
		names = append(names, "ops listener ("+c.cfg.Ops.Listen+")")
	}
	switch {
	case describe:
		for _, h := range c.consumers.NotReady() {
			names = append(names, fmt.Sprintf("handler %q", h))
		}
	case !c.consumers.AllReady():
		names = append(names, "handlers")
	}
	for _, t := range c.taskStatus() {
		if t.Child.State != supervisor.Running || !r.leased[t.Queue] {
			names = append(names, fmt.Sprintf("task queue %q", t.Queue))
		}
	}
	for _, w := range c.watchers.Status() {
		ch := c.syncs(w.Name)
		synced := true
		if ch != nil {
			select {
			case <-ch:
			default:
				synced = false
				if syncing == nil {
					syncing = ch
				}
			}
		}
		if w.State != supervisor.Running || !synced {
			names = append(names, fmt.Sprintf("watch %q", w.Name))
		}
	}
	return names, syncing
}

// syncs is the Synced channel of the watch named name, nil if it has none.
func (c *Client) syncs(name string) <-chan struct{} {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.synced[name]
}

// readiness is what Ready learns from the tree's events and from Serve: a
// channel closed and replaced at each, how the last Run ended, and which
// task workers hold a lease. A worker says so by its LeaseAcquired event
// alone: its Status reports the lease only a moment later.
type readiness struct {
	mu      sync.Mutex
	changed chan struct{}
	runs    uint64 // Serves begun
	running bool
	lastErr error           // what the last Serve returned
	failed  bool            // the last Serve returned while its ctx was live
	leased  map[string]bool // by task queue
}

type readySnapshot struct {
	changed <-chan struct{}
	runs    uint64
	running bool
	lastErr error
	failed  bool
	leased  map[string]bool
}

func newReadiness() *readiness {
	return &readiness{changed: make(chan struct{}), leased: map[string]bool{}}
}

// hook sees every event of the tree before next, the application's hook.
func (r *readiness) hook(next supervisor.Hook) supervisor.Hook {
	return func(ev supervisor.Event) {
		r.observe(ev)
		if next != nil {
			next(ev)
		}
	}
}

func (r *readiness) observe(ev supervisor.Event) {
	r.mu.Lock()
	defer r.mu.Unlock()
	switch ev := ev.(type) {
	case supervisor.ChildStarted:
		// Emitted before a worker's Serve begins, so before the
		// LeaseAcquired of that Serve: the lease of an earlier one is
		// gone. A worker's child is named "tasks/<queue>".
		if queue, ok := strings.CutPrefix(ev.Child, "tasks/"); ok {
			r.leased[queue] = false
		}
	case tasks.LeaseAcquired:
		r.leased[ev.Queue] = true
	case tasks.LeaseLost:
		r.leased[ev.Queue] = false
	}
	r.notifyLocked()
}

func (r *readiness) notifyLocked() {
	close(r.changed)
	r.changed = make(chan struct{})
}

func (r *readiness) began() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.runs++
	r.running = true
	r.notifyLocked()
}

func (r *readiness) ended(err error, failed bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.running, r.lastErr, r.failed = false, err, failed
	r.notifyLocked()
}

func (r *readiness) snapshot() readySnapshot {
	r.mu.Lock()
	defer r.mu.Unlock()
	leased := make(map[string]bool, len(r.leased))
	for q, ok := range r.leased {
		leased[q] = ok
	}
	return readySnapshot{changed: r.changed, runs: r.runs, running: r.running, lastErr: r.lastErr, failed: r.failed, leased: leased}
}
