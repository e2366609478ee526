package corral_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/thejerf/suture/v4"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"

	"github.com/corral-go/corral"
	"github.com/corral-go/corral/connection"
	"github.com/corral-go/corral/embedded"
	"github.com/corral-go/corral/internal/natstest"
	"github.com/corral-go/corral/supervisor"
)

// running runs c until the test ends or stop is called; stop returns what
// Run returned.
func running(t *testing.T, c *corral.Client) (stop func() error) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- c.Run(ctx) }()
	var once sync.Once
	var err error
	stop = func() error {
		once.Do(func() {
			cancel()
			select {
			case err = <-done:
			case <-time.After(c.ShutdownTimeout() + 10*time.Second):
				t.Fatalf("Run did not return after its ctx ended:\n%s", c.Status())
			}
		})
		return err
	}
	t.Cleanup(func() { _ = stop() })
	return stop
}

// runReady runs c until the test ends and waits until it is ready; the
// ctx it returns bounds the test's own waits.
func runReady(t *testing.T, c *corral.Client) context.Context {
	t.Helper()
	running(t, c)
	ready(t, c)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// embeddedServer runs the embedded server for a Client configured with no
// servers.
var embeddedServer = corral.WithEmbeddedServer(embedded.New)

func embeddedConfig(t *testing.T) corral.Config {
	var cfg corral.Config
	cfg.Name = "test"
	cfg.Server.StoreDir = t.TempDir()
	return cfg
}

func waitConn(t *testing.T, c *corral.Client) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	nc, err := c.Conn(ctx)
	if err != nil {
		t.Fatalf("Conn: %v", err)
	}
	if _, err := nc.RTT(); err != nil {
		t.Fatalf("RTT: %v", err)
	}
}

func TestRunsOnTheEmbeddedServer(t *testing.T) {
	t.Parallel()
	rec := natstest.NewRecorder()
	c, err := corral.New(embeddedConfig(t), embeddedServer, corral.WithEventHook(rec.Hook))
	if err != nil {
		t.Fatal(err)
	}
	stop := running(t, c)
	waitConn(t, c)

	// The embedded server has JetStream.
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	nc, _ := c.Conn(ctx)
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := js.AccountInfo(ctx); err != nil {
		t.Fatalf("JetStream on the embedded server: %v", err)
	}

	// Children start concurrently: the connection may be up before the
	// publisher's Serve has begun. Ready waits for both.
	if err := c.Ready(ctx); err != nil {
		t.Fatal(err)
	}
	st := c.Status()
	for _, ch := range st.Children {
		if ch.State != supervisor.Running {
			t.Fatalf("%s %s after Ready:\n%s", ch.Name, ch.State, st)
		}
	}
	names := []string{}
	for _, ch := range st.Children {
		names = append(names, ch.Name)
	}
	if !slices.Equal(names, []string{"server", "connection", "publisher", "discovery"}) {
		t.Fatalf("children: got %v", names)
	}
	if st.Connection.State != connection.StateConnected {
		t.Fatalf("connection: got %s", st.Connection.State)
	}
	if !strings.Contains(st.String(), "since=") {
		t.Fatalf("status of running children shows no start time:\n%s", st)
	}

	if err := stop(); err != nil {
		t.Fatalf("Run: got %v, want nil after ctx ended", err)
	}
	st = c.Status()
	for _, ch := range st.Children {
		if ch.State != supervisor.Stopped {
			t.Errorf("%s after Run: got %s, want stopped", ch.Name, ch.State)
		}
	}
	if len(st.Unstopped) != 0 {
		t.Fatalf("unstopped: %v", st.Unstopped)
	}
	// The connection drained and closed before the server stopped.
	_, closedAt := natstest.WaitFor[connection.Closed](t, rec, 0, time.Second, nil)
	_, stoppedAt := natstest.WaitFor[embedded.Stopped](t, rec, 0, time.Second, nil)
	if closedAt > stoppedAt {
		t.Fatalf("server stopped (event %d) before the connection closed (event %d)", stoppedAt, closedAt)
	}
}

func TestRunsOnAnExternalServer(t *testing.T) {
	t.Parallel()
	srv := natstest.RunServer(t)
	core, logs := observer.New(zap.InfoLevel)
	cfg := corral.Config{Name: "ext"}
	cfg.Connection.Servers = []string{srv.URL()}
	c, err := corral.New(cfg, embeddedServer, corral.WithLogger(zap.New(core)))
	if err != nil {
		t.Fatal(err)
	}
	stop := running(t, c)
	waitConn(t, c)
	if n := len(c.Status().Children); n != 3 {
		t.Fatalf("got %d children, want the connection, the publisher and discovery", n)
	}
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	entries := logs.FilterMessage("connection.connected").All()
	if len(entries) != 1 || entries[0].ContextMap()["url"] != srv.URL() {
		t.Fatalf("connected log lines: got %v", entries)
	}
	// The server notices the close asynchronously.
	natstest.Eventually(t, 5*time.Second, func() bool { return srv.Raw().NumClients() == 0 },
		func() string { return "the client is still connected after Run returned" })
}

func TestEmbeddedServerKeepsItsPortAcrossRuns(t *testing.T) {
	t.Parallel()
	c, err := corral.New(embeddedConfig(t), embeddedServer)
	if err != nil {
		t.Fatal(err)
	}
	var urls []string
	for range 2 {
		stop := running(t, c)
		// Ready waits for the second Run to begin; Conn, between the two,
		// fails with ErrNotRunning.
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		if err := c.Ready(ctx); err != nil {
			t.Fatal(err)
		}
		cancel()
		urls = append(urls, c.Status().Connection.URL)
		if err := stop(); err != nil {
			t.Fatal(err)
		}
	}
	if urls[0] == "" || urls[0] != urls[1] {
		t.Fatalf("URLs of two runs: %v, want the same", urls)
	}
}

func TestRunRejectsASecondConcurrentRun(t *testing.T) {
	t.Parallel()
	srv := natstest.RunServer(t)
	cfg := corral.Config{}
	cfg.Connection.Servers = []string{srv.URL()}
	c, err := corral.New(cfg, embeddedServer)
	if err != nil {
		t.Fatal(err)
	}
	running(t, c)
	waitConn(t, c)
	if err := c.Run(context.Background()); !errors.Is(err, corral.ErrRunning) {
		t.Fatalf("second Run: got %v, want ErrRunning", err)
	}
}

func TestClientRunsUnderAnApplicationTree(t *testing.T) {
	t.Parallel()
	srv := natstest.RunServer(t)
	cfg := corral.Config{Name: "child"}
	cfg.Connection.Servers = []string{srv.URL()}
	c, err := corral.New(cfg, embeddedServer)
	if err != nil {
		t.Fatal(err)
	}
	app := suture.New("app", suture.Spec{EventHook: func(suture.Event) {}})
	app.Add(c)
	ctx, cancel := context.WithCancel(context.Background())
	done := app.ServeBackground(ctx)
	waitConn(t, c)
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("application tree: got %v", err)
	}
	report, err := app.UnstoppedServiceReport()
	if err != nil || len(report) != 0 {
		t.Fatalf("unstopped: %v, %v", report, err)
	}
	if st := c.Status().Connection.State; st != connection.StateStopped {
		t.Fatalf("connection after the application stopped: %s", st)
	}
}
