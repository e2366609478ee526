package ops_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/corral-go/corral"
	"github.com/corral-go/corral/consumer"
	"github.com/corral-go/corral/corraltest"
	"github.com/corral-go/corral/embedded"
	"github.com/corral-go/corral/internal/natstest"
	"github.com/corral-go/corral/ops"
	"github.com/corral-go/corral/stream"
)

// The Client serves the ops endpoints itself at ops.listen, and /readyz
// follows the connection: 503 naming it while the server is gone, 200
// once it is back. /healthz stays 200 throughout: the tree runs.
func TestReadinessFollowsTheServer(t *testing.T) {
	t.Parallel()
	srv := natstest.RunServer(t)
	var cfg corral.Config
	cfg.Name = "ops-ready"
	cfg.Connection.Servers = []string{srv.URL()}
	cfg.Connection.ReconnectWait = 50 * time.Millisecond
	cfg.Ops.Listen = "127.0.0.1:0"
	k := corraltest.New(t, cfg, corral.WithOps(ops.New))
	c := k.Client
	if err := c.Handle("echo", consumer.Config{Subject: "ops.echo"}, consumer.HandlerFunc(func(context.Context, *consumer.Msg) error { return nil })); err != nil {
		t.Fatal(err)
	}
	if code, body := get(t, c.OpsHandler(), "/healthz"); code != http.StatusServiceUnavailable {
		t.Fatalf("healthz before Run: got %d %q, want 503", code, body)
	}
	start(t, k)
	natstest.Eventually(t, 10*time.Second, func() bool { return c.OpsAddr() != "" }, func() string { return "ops listener never bound" })
	addr := c.OpsAddr()
	expect := func(path string, code int, in string) {
		t.Helper()
		var got int
		var body string
		natstest.Eventually(t, 20*time.Second, func() bool {
			var err error
			got, body, err = getURL(t, addr, path)
			return err == nil && got == code && strings.Contains(body, in)
		}, func() string { return fmt.Sprintf("%s: got %d %q, want %d with %q", path, got, body, code, in) })
	}
	expect("/healthz", http.StatusOK, "ok")
	expect("/readyz", http.StatusOK, "ready")

	srv.Shutdown()
	expect("/readyz", http.StatusServiceUnavailable, "connection (reconnecting)")
	expect("/healthz", http.StatusOK, "ok")

	srv.Start()
	expect("/readyz", http.StatusOK, "ready")
}

// A Client's metrics count what was run: messages received, processed
// and failed by each handler, messages the publisher had acked, its
// children's restarts; and they share the application's registry.
func TestMetricsMatchTheWorkload(t *testing.T) {
	t.Parallel()
	var cfg corral.Config
	cfg.Name = "metrics"
	cfg.Streams = map[string]stream.Config{"ORDERS": {Subjects: []string{"orders.>"}}}
	reg := newRegistry(t)
	k := corraltest.New(t, cfg, corral.WithOps(ops.Config{Registry: reg}.New))
	c := k.Client
	const core, failing, jsMsgs = 30, 7, 12
	handled := make(chan struct{}, core+jsMsgs)
	if err := c.Handle("greet", consumer.Config{Subject: "greet"}, consumer.HandlerFunc(func(_ context.Context, m *consumer.Msg) error {
		defer func() { handled <- struct{}{} }()
		if strings.HasPrefix(string(m.Data()), "bad") {
			return errors.New("bad greeting")
		}
		return nil
	})); err != nil {
		t.Fatal(err)
	}
	if err := c.Handle("orders", consumer.Config{JetStream: consumer.JetStream{Stream: "ORDERS", Consumer: "orders"}}, consumer.HandlerFunc(func(context.Context, *consumer.Msg) error {
		handled <- struct{}{}
		return nil
	})); err != nil {
		t.Fatal(err)
	}
	flaky := natstest.NewFlaky("flaky")
	if err := c.AddWatch(flaky); err != nil {
		t.Fatal(err)
	}
	ctx := start(t, k)
	for i := range core {
		data := fmt.Sprintf("hello %d", i)
		if i < failing {
			data = fmt.Sprintf("bad %d", i)
		}
		if err := c.PublishCore(ctx, "greet", []byte(data)); err != nil {
			t.Fatal(err)
		}
	}
	for i := range jsMsgs {
		if _, err := c.PublishSync(ctx, fmt.Sprintf("orders.%d", i), []byte("order")); err != nil {
			t.Fatal(err)
		}
	}
	for range core + jsMsgs {
		select {
		case <-handled:
		case <-ctx.Done():
			t.Fatalf("handlers did not see every message:\n%s", c.Status())
		}
	}
	flaky.FailOnce(t)

	// A handler call is counted once settled, a moment after it
	// returned: the scrape is retried until the counts are in.
	var m metricFamilies
	natstest.Eventually(t, 10*time.Second, func() bool {
		m = scrape(t, c.OpsHandler())
		return m.value("corral_handler_processed_total", "handler", "greet") == core-failing &&
			m.value("corral_handler_acked_total", "handler", "orders") == jsMsgs &&
			m.value("corral_child_restarts_total", "child", "flaky") == 1
	}, func() string { return m.text })
	for _, want := range []struct {
		name, label, value string
		want               float64
	}{
		{"corral_handler_received_total", "handler", "greet", core},
		{"corral_handler_processed_total", "handler", "greet", core - failing},
		{"corral_handler_failed_total", "handler", "greet", failing},
		{"corral_handler_received_total", "handler", "orders", jsMsgs},
		{"corral_handler_processed_total", "handler", "orders", jsMsgs},
		{"corral_handler_queue_depth", "handler", "greet", 0},
		{"corral_handler_workers", "handler", "greet", 1},
		{"corral_publisher_acked_total", "", "", jsMsgs},
		{"corral_publisher_published_total", "", "", jsMsgs},
		{"corral_publisher_failed_total", "", "", 0},
		{"corral_connection_connected", "", "", 1},
		{"corral_connection_reconnects_total", "", "", 0},
		{"corral_child_up", "child", "connection", 1},
		{"corral_child_up", "child", "handler/greet", 1},
		{"corral_child_restarts_total", "child", "flaky", 1},
		{"corral_child_restarts_total", "child", "connection", 0},
		{"app_requests_total", "", "", 3},
	} {
		if got := m.value(want.name, want.label, want.value); got != want.want {
			t.Errorf("%s{%s=%q}: got %v, want %v", want.name, want.label, want.value, got, want.want)
		}
	}
	// The latency histogram is sampled, each sample counting for the
	// calls until the next: its count is within a sample (eight) of the
	// calls made.
	if n := m.histogramCount("corral_handler_duration_seconds", "greet"); n+8 < core || n > core+8 {
		t.Errorf("corral_handler_duration_seconds{handler=greet} count: got %d, want %d within 8", n, core)
	}
	if got := m.label("corral_handler_received_total", "client"); got != "metrics" {
		t.Errorf("client label: got %q, want %q", got, "metrics")
	}

	// A second Client of the same name cannot share the registry.
	var cfg2 corral.Config
	cfg2.Name = "metrics"
	cfg2.Server.StoreDir = t.TempDir()
	if _, err := corral.New(cfg2, corral.WithEmbeddedServer(embedded.New), corral.WithOps(ops.Config{Registry: reg}.New)); err == nil || !strings.Contains(err.Error(), `client "metrics"`) {
		t.Fatalf("New with a registry that has a Client of the same name: got %v, want an error naming it", err)
	}
}

// /status is the Status snapshot as JSON; ops.page: false turns the page
// off at the Client's listener, and leaves everything else served.
func TestStatusJSONAndPageOff(t *testing.T) {
	t.Parallel()
	var cfg corral.Config
	cfg.Name = "status-json"
	off := false
	cfg.Ops.Page = &off
	cfg.Ops.Listen = "127.0.0.1:0"
	k := corraltest.New(t, cfg, corral.WithOps(ops.New))
	c := k.Client
	if err := c.Handle("echo", consumer.Config{Subject: "echo"}, consumer.HandlerFunc(func(context.Context, *consumer.Msg) error { return nil })); err != nil {
		t.Fatal(err)
	}
	start(t, k)
	code, body := get(t, c.OpsHandler(), "/status")
	if code != http.StatusOK {
		t.Fatalf("/status: got %d %q", code, body)
	}
	var st corral.Status
	if err := json.Unmarshal([]byte(body), &st); err != nil {
		t.Fatalf("/status is not a Status: %v\n%s", err, body)
	}
	if st.Name != "status-json" || len(st.Handlers) != 1 || st.Handlers[0].Name != "echo" || st.Connection.URL == "" ||
		!st.Running || len(st.NotReady) != 0 {
		t.Fatalf("/status: got %+v", st)
	}
	// Durations read as a configuration writes them, and back.
	if !strings.Contains(body, `"Backoff": "15s"`) || !strings.Contains(body, `"P99": "`) {
		t.Fatalf("/status: durations are not Go durations:\n%s", body)
	}
	if p := st.Handlers[0].Child.Policy; p.Backoff != 15*time.Second || p.RestartDelay != 100*time.Millisecond {
		t.Fatalf("/status: the handler's policy read back as %+v", p)
	}
	addr := c.OpsAddr()
	for _, want := range []struct {
		path string
		code int
	}{{"/", http.StatusNotFound}, {"/status", http.StatusOK}, {"/readyz", http.StatusOK}, {"/metrics", http.StatusOK}} {
		code, body, err := getURL(t, addr, want.path)
		if err != nil || code != want.code {
			t.Errorf("listener %s: got %d %q %v, want %d", want.path, code, body, err, want.code)
		}
	}
	if code, _ := get(t, c.OpsHandler(), "/"); code != http.StatusOK {
		t.Fatalf("the handler's own page: got %d, want 200", code)
	}
}

// No endpoint shows the credentials the connection uses, nor the user
// name: the endpoints have no authentication of their own.
func TestOpsEndpointsHideCredentials(t *testing.T) {
	t.Parallel()
	const user, password = "opsuser-7f3a", "s3cr3t-pa55"
	srv := natstest.RunServer(t, natstest.WithUser(user, password))
	var cfg corral.Config
	cfg.Name = "ops-creds"
	cfg.Connection.Servers = []string{strings.Replace(srv.URL(), "nats://", "nats://"+user+":"+password+"@", 1)}
	k := corraltest.New(t, cfg, corral.WithOps(ops.New))
	c := k.Client
	start(t, k)
	for _, path := range []string{"/", "/status", "/metrics", "/readyz", "/healthz"} {
		code, body := get(t, c.OpsHandler(), path)
		if code != http.StatusOK {
			t.Errorf("%s: got %d", path, code)
		}
		for _, secret := range []string{password, user} {
			if strings.Contains(body, secret) {
				t.Errorf("%s shows %q:\n%s", path, secret, body)
			}
		}
	}
	if code, body := get(t, c.OpsHandler(), "/status"); code != http.StatusOK || !strings.Contains(body, srv.URL()) {
		t.Errorf("/status: got %d, want the server's URL %s:\n%s", code, srv.URL(), body)
	}
}

// A scrape while a handler is removed does not fail: a handler gone since
// Status was read is left out of the histograms.
func TestScrapeWhileHandlersComeAndGo(t *testing.T) {
	t.Parallel()
	k := corraltest.New(t, corral.Config{}, corral.WithOps(ops.New))
	c := k.Client
	ctx := start(t, k)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := range 20 {
			name := fmt.Sprintf("h%d", i)
			if err := c.Handle(name, consumer.Config{Subject: "churn." + name}, consumer.HandlerFunc(func(context.Context, *consumer.Msg) error { return nil })); err != nil {
				t.Error(err)
				return
			}
			if err := c.RemoveHandler(ctx, name); err != nil {
				t.Error(err)
				return
			}
		}
	}()
	for {
		select {
		case <-done:
			return
		default:
		}
		if code, body := get(t, c.OpsHandler(), "/metrics"); code != http.StatusOK {
			t.Fatalf("/metrics: got %d\n%s", code, body)
		}
	}
}
