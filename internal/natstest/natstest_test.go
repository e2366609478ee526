package natstest_test

import (
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/corral-go/corral/internal/leakcheck"
	"github.com/corral-go/corral/internal/natstest"
)

func TestMain(m *testing.M) { leakcheck.VerifyTestMain(m, natstest.IgnoreServerLeaks()...) }

// connect connects to url, reconnecting every 20ms, forever.
func connect(t *testing.T, url string, opts ...nats.Option) *nats.Conn {
	t.Helper()
	return natstest.Connect(t, url, append([]nats.Option{nats.MaxReconnects(-1), nats.ReconnectWait(20 * time.Millisecond)}, opts...)...)
}

func TestProxyPausesAndRestores(t *testing.T) {
	t.Parallel()
	srv := natstest.RunServer(t)
	proxy := natstest.NewProxy(t, srv.URL())
	nc := connect(t, proxy.URL())
	if err := nc.FlushTimeout(time.Second); err != nil {
		t.Fatal(err)
	}
	proxy.Pause()
	if err := nc.FlushTimeout(200 * time.Millisecond); err == nil {
		t.Fatal("flush through a paused proxy succeeded")
	}
	proxy.Restore()
	// The held PING reaches the server; the same connection carries on.
	if err := nc.FlushTimeout(5 * time.Second); err != nil {
		t.Fatalf("after restore: %v", err)
	}
	if nc.Stats().Reconnects != 0 {
		t.Fatal("a pause made the client reconnect")
	}
	if proxy.Accepted() != 1 {
		t.Fatalf("accepted %d connections, want 1", proxy.Accepted())
	}
}

func TestProxyCutResetsAndRefuses(t *testing.T) {
	t.Parallel()
	srv := natstest.RunServer(t)
	proxy := natstest.NewProxy(t, srv.URL())
	disconnected := make(chan struct{}, 1)
	reconnected := make(chan struct{}, 1)
	nc := connect(t, proxy.URL(),
		nats.DisconnectErrHandler(func(*nats.Conn, error) { signal(disconnected) }),
		nats.ReconnectHandler(func(*nats.Conn) { signal(reconnected) }))
	proxy.Cut()
	select {
	case <-disconnected:
	case <-time.After(5 * time.Second):
		t.Fatal("no disconnect after cut")
	}
	if nc.IsConnected() {
		t.Fatal("connected through a cut proxy")
	}
	proxy.Restore()
	select {
	case <-reconnected:
	case <-time.After(10 * time.Second):
		t.Fatal("no reconnect after restore")
	}
	if proxy.Accepted() < 2 {
		t.Fatalf("accepted %d connections, want the reconnects counted", proxy.Accepted())
	}
}

func TestProcessPauseKillAndRestart(t *testing.T) {
	t.Parallel()
	proc := natstest.StartProcess(t)
	nc := connect(t, proc.URL())
	if err := nc.FlushTimeout(time.Second); err != nil {
		t.Fatal(err)
	}
	proc.Pause()
	if err := nc.FlushTimeout(200 * time.Millisecond); err == nil {
		t.Fatal("flush to a stopped process succeeded")
	}
	proc.Resume()
	if err := nc.FlushTimeout(5 * time.Second); err != nil {
		t.Fatalf("after SIGCONT: %v", err)
	}
	url := proc.URL()
	proc.Kill()
	proc.Start()
	if proc.URL() != url {
		t.Fatalf("restarted on %s, want %s", proc.URL(), url)
	}
	if err := nc.FlushTimeout(10 * time.Second); err != nil {
		t.Fatalf("after kill -9 and restart: %v", err)
	}
}

func TestClusterNodeRestart(t *testing.T) {
	t.Parallel()
	c := natstest.RunCluster(t, 3)
	c.Stop(1)
	c.Restart(1)
	nc := connect(t, c.Nodes[1].URL())
	if err := nc.FlushTimeout(5 * time.Second); err != nil {
		t.Fatal(err)
	}
}

// signal never blocks nats.go's callback goroutine.
func signal(ch chan struct{}) {
	select {
	case ch <- struct{}{}:
	default:
	}
}
