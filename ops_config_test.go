package corral_test

import (
	"errors"
	"strings"
	"testing"

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
