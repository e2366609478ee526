package connection_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"

	"github.com/corral-go/corral/connection"
	"github.com/corral-go/corral/internal/natstest"
	"github.com/corral-go/corral/supervisor"
)

// harness runs a connection supervisor (and any dependents) in a tree and
// records its events and logs.
type harness struct {
	t    *testing.T
	rec  *natstest.Recorder
	logs *observer.ObservedLogs
	sup  *connection.Supervisor
	tree *supervisor.Tree
	stop func() error
}

func newHarness(t *testing.T, cfg connection.Config, dependents ...*dependent) *harness {
	t.Helper()
	return newHarnessPolicy(t, cfg, supervisor.Policy{RestartDelay: 10 * time.Millisecond, Backoff: time.Second}, dependents...)
}

// newHarnessPolicy is newHarness with the connection's restart policy.
func newHarnessPolicy(t *testing.T, cfg connection.Config, policy supervisor.Policy, dependents ...*dependent) *harness {
	t.Helper()
	core, logs := observer.New(zap.DebugLevel)
	h := &harness{t: t, rec: natstest.NewRecorder(), logs: logs}
	events := supervisor.Events{Logger: zap.New(core), Hook: h.rec.Hook}
	cfg.Events = events
	sup, err := connection.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	h.sup = sup
	h.tree = supervisor.NewTree("test", events)
	if err := h.tree.Add("connection", sup, policy); err != nil {
		t.Fatal(err)
	}
	for _, d := range dependents {
		d.conns = sup
		if err := h.tree.Add(d.String(), d, supervisor.Policy{}); err != nil {
			t.Fatal(err)
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- h.tree.Serve(ctx) }()
	var once sync.Once
	var serveErr error
	h.stop = func() error {
		once.Do(func() {
			cancel()
			serveErr = <-done
		})
		return serveErr
	}
	t.Cleanup(func() { _ = h.stop() })
	return h
}

// conn waits for the connected connection.
func (h *harness) conn() connInfo {
	h.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	nc, gone, err := h.sup.Conn(ctx)
	if err != nil {
		h.t.Fatalf("Conn: %v", err)
	}
	return connInfo{nc: nc, gone: gone}
}

// shutdown stops the tree and checks that it stopped cleanly.
func (h *harness) shutdown() {
	h.t.Helper()
	if err := h.stopErr(); err != nil {
		h.t.Fatal(err)
	}
}

// stopErr stops the tree and says what was wrong with the stop, if
// anything; it may be called from any goroutine.
func (h *harness) stopErr() error {
	if err := h.stop(); !errors.Is(err, context.Canceled) || errors.Is(err, supervisor.ErrShutdownIncomplete) {
		return fmt.Errorf("Serve: got %v, want a clean stop", err)
	}
	if u := h.tree.Unstopped(); len(u) != 0 {
		return fmt.Errorf("unstopped: %v", u)
	}
	return nil
}

// next waits for the dependent's next connection.
func (d *dependent) next(t *testing.T) connInfo {
	t.Helper()
	select {
	case ci := <-d.ch:
		return ci
	case <-time.After(20 * time.Second):
		t.Fatal("the dependent was not handed a connection")
		return connInfo{}
	}
}

// dependent is a service that uses the connection: it follows it across
// replacements and records each one it was handed.
type dependent struct {
	conns *connection.Supervisor
	ch    chan connInfo
}

type connInfo struct {
	nc   *nats.Conn
	gone <-chan struct{}
}

func newDependent() *dependent { return &dependent{ch: make(chan connInfo, 16)} }

func (d *dependent) String() string { return "dependent" }

func (d *dependent) Serve(ctx context.Context) error {
	for {
		nc, gone, err := d.conns.Conn(ctx)
		if err != nil {
			return err
		}
		select {
		case d.ch <- connInfo{nc: nc, gone: gone}:
		case <-ctx.Done():
			return ctx.Err()
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-gone:
		}
	}
}

func stringify(v any) string {
	switch v := v.(type) {
	case string:
		return v
	case error:
		return v.Error()
	default:
		return fmt.Sprintf("%+v", v)
	}
}
