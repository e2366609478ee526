package corral_test

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/corral-go/corral"
	"github.com/corral-go/corral/connection"
	"github.com/corral-go/corral/internal/natstest"
	"github.com/corral-go/corral/supervisor"
)

// The connection's restart policy written in YAML is the one its child
// runs with, the fields it leaves out taken from the top-level policy and
// no other child taking its fields.
func TestConnectionRestartPolicyFromYAML(t *testing.T) {
	t.Parallel()
	srv := natstest.RunServer(t)
	cfg, err := corral.ParseConfig([]byte(`
name: policy
connection:
  servers: [` + srv.URL() + `]
  reconnect: false
  restart: {mode: transient, failure_threshold: 3, restart_delay: 50ms, backoff: 2s, jitter: 0.2}
restart: {failure_decay: 45s, shutdown_timeout: 20s}
`))
	if err != nil {
		t.Fatal(err)
	}
	if r := cfg.Connection.Reconnect; r == nil || *r {
		t.Fatalf("connection.reconnect: got %v, want false", r)
	}
	c, err := corral.New(cfg, embeddedServer)
	if err != nil {
		t.Fatal(err)
	}
	stop := running(t, c)
	waitConn(t, c)
	policies := map[string]supervisor.Policy{}
	for _, ch := range c.Status().Children {
		policies[ch.Name] = ch.Policy
	}
	got, ok := policies["connection"]
	if !ok {
		t.Fatalf("no connection child in %v", c.Status().Children)
	}
	if got.Mode != supervisor.Transient || got.FailureThreshold != 3 || got.RestartDelay != 50*time.Millisecond ||
		got.Backoff != 2*time.Second || got.Jitter == nil || *got.Jitter != 0.2 ||
		got.FailureDecay != 45*time.Second || got.ShutdownTimeout != 20*time.Second {
		t.Fatalf("connection policy: got %+v, want its own fields and failure_decay 45s, shutdown_timeout 20s inherited", got)
	}
	if pub := policies["publisher"]; pub.Mode != supervisor.Permanent || pub.FailureThreshold != 5 || pub.FailureDecay != 45*time.Second {
		t.Fatalf("publisher policy: got %+v, want the top-level one", pub)
	}
	if err := stop(); err != nil {
		t.Fatal(err)
	}
}

// Callbacks passed with WithNATSOptions run, after Corral's own, whose
// events still fire.
func TestWithNATSOptionsCallbacksRunAfterCorrals(t *testing.T) {
	t.Parallel()
	srv := natstest.RunServer(t)
	rec := natstest.NewRecorder()
	// Each callback reports whether Corral's event was already recorded.
	disconnected, reconnected := make(chan bool, 4), make(chan bool, 4)
	seen := func(kind string) bool {
		return slices.ContainsFunc(rec.Events(), func(e supervisor.Event) bool { return e.Kind() == kind })
	}
	cfg := corral.Config{Name: "chained"}
	cfg.Connection.Servers = []string{srv.URL()}
	c, err := corral.New(cfg, embeddedServer, corral.WithEventHook(rec.Hook), corral.WithNATSOptions(
		nats.DisconnectErrHandler(func(*nats.Conn, error) { disconnected <- seen("connection.disconnected") }),
		nats.ReconnectHandler(func(*nats.Conn) { reconnected <- seen("connection.reconnected") }),
	))
	if err != nil {
		t.Fatal(err)
	}
	stop := running(t, c)
	waitConn(t, c)
	srv.Restart()
	for name, ch := range map[string]chan bool{"disconnect": disconnected, "reconnect": reconnected} {
		select {
		case after := <-ch:
			if !after {
				t.Fatalf("the application's %s handler ran before Corral's event", name)
			}
		case <-time.After(20 * time.Second):
			t.Fatalf("the application's %s handler never ran", name)
		}
	}
	natstest.WaitFor[connection.Disconnected](t, rec, 0, time.Second, nil)
	natstest.WaitFor[connection.Reconnected](t, rec, 0, time.Second, nil)
	if err := stop(); err != nil {
		t.Fatal(err)
	}
}

// The servers a cluster announces show in Status and in its drawing.
func TestStatusShowsDiscoveredServers(t *testing.T) {
	t.Parallel()
	cluster := natstest.RunCluster(t, 3)
	cfg := corral.Config{Name: "discovering"}
	cfg.Connection.Servers = []string{cluster.Nodes[0].URL()}
	c, err := corral.New(cfg, embeddedServer)
	if err != nil {
		t.Fatal(err)
	}
	stop := running(t, c)
	waitConn(t, c)
	others := []string{cluster.Nodes[1].URL(), cluster.Nodes[2].URL()}
	natstest.Eventually(t, 10*time.Second, func() bool {
		d := c.Status().Connection.Discovered
		return slices.Contains(d, others[0]) && slices.Contains(d, others[1])
	}, func() string { return "status:\n" + c.Status().String() })
	drawn := c.Status().String()
	for _, u := range others {
		if !strings.Contains(drawn, u) || !strings.Contains(drawn, " discovered=") {
			t.Fatalf("drawing lacks discovered server %s:\n%s", u, drawn)
		}
	}
	if err := stop(); err != nil {
		t.Fatal(err)
	}
}
