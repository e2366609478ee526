package corral_test

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/corral-go/corral"
	"github.com/corral-go/corral/internal/natstest"
	"github.com/corral-go/corral/supervisor"
)

func TestOpsConfigIsValidated(t *testing.T) {
	t.Parallel()
	for _, listen := range []string{"localhost", "127.0.0.1:http", "127.0.0.1:70000", ":-1"} {
		cfg := embeddedConfig(t)
		cfg.Ops.Listen = listen
		_, err := corral.New(cfg, embeddedServer)
		if !errors.Is(err, corral.ErrInvalidConfig) || !strings.Contains(err.Error(), "ops.listen") {
			t.Errorf("listen %q: got %v, want an error naming ops.listen", listen, err)
		}
	}
}

// A watch cannot take the name of another child of the tree: the metrics
// and the status page tell children apart by name.
func TestWatchNamedLikeAChildIsRefused(t *testing.T) {
	t.Parallel()
	c, err := corral.New(embeddedConfig(t), embeddedServer)
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"publisher", "connection", "server", "consumers", "watchers", "handler/orders", "tasks/render"} {
		if err := c.AddWatch(natstest.NewFlaky(name)); !errors.Is(err, supervisor.ErrDuplicateChild) || !strings.Contains(err.Error(), name) {
			t.Errorf("watch %q: got %v, want ErrDuplicateChild naming it", name, err)
		}
	}
	if err := c.AddWatch(natstest.NewFlaky("settings-watch")); err != nil {
		t.Fatalf("a watch of its own name: %v", err)
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
}

// ops.listen is refused without WithOps: there would be nothing to serve.
func TestOpsListenWithoutOpsIsRefused(t *testing.T) {
	t.Parallel()
	cfg := embeddedConfig(t)
	cfg.Ops.Listen = "127.0.0.1:0"
	_, err := corral.New(cfg, embeddedServer)
	if !errors.Is(err, corral.ErrInvalidConfig) || !strings.Contains(err.Error(), "ops.listen") ||
		!strings.Contains(err.Error(), "corral.WithOps(ops.New)") {
		t.Fatalf("got %v, want an error naming ops.listen and corral.WithOps(ops.New)", err)
	}
}

// Listening on every interface is said at start, as a warning naming
// the address: the endpoints have no authentication of their own. On
// loopback it is news, not a warning.
func TestOpsListeningOnEveryInterfaceWarns(t *testing.T) {
	t.Parallel()
	serve := corral.WithOps(func(*corral.Client) (http.Handler, error) { return http.NotFoundHandler(), nil })
	for listen, warn := range map[string]bool{":0": true, "0.0.0.0:0": true, "127.0.0.1:0": false} {
		cfg := embeddedConfig(t)
		cfg.Ops.Listen = listen
		rec := natstest.NewRecorder()
		c, err := corral.New(cfg, embeddedServer, serve, corral.WithEventHook(rec.Hook))
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		done := make(chan error, 1)
		go func() { done <- c.Run(ctx) }()
		ev, _ := natstest.WaitFor[corral.OpsListening](t, rec, 0, 10*time.Second, nil)
		cancel()
		if err := <-done; err != nil {
			t.Fatalf("Run: %v", err)
		}
		fields := supervisor.EventFields(ev).Map()
		switch {
		case warn && (ev.Level() != supervisor.WarnLevel || fields["all_interfaces"] != true || fields["addr"] != ev.Addr):
			t.Errorf("listen %q: got %s at %v, fields %v; want a warning naming the address, every interface", listen, ev.Kind(), ev.Level(), fields)
		case !warn && (ev.Level() != supervisor.InfoLevel || fields["all_interfaces"] != nil):
			t.Errorf("listen %q: got %s at %v, fields %v; want info", listen, ev.Kind(), ev.Level(), fields)
		}
	}
}
