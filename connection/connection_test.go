package connection_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/corral-go/corral/connection"
	"github.com/corral-go/corral/internal/natstest"
	"github.com/corral-go/corral/supervisor"
)

func TestConnectsAndStopsCleanly(t *testing.T) {
	t.Parallel()
	srv := natstest.RunServer(t)
	h := newHarness(t, connection.Config{Servers: []string{srv.URL()}})
	ci := h.conn()

	ev, _ := natstest.WaitFor[connection.Connected](t, h.rec, 0, 5*time.Second, nil)
	if ev.URL != srv.URL() || ev.Generation != 1 || ev.ServerName != "natstest" {
		t.Fatalf("connected event: got %+v", ev)
	}
	if _, err := ci.nc.RTT(); err != nil {
		t.Fatalf("RTT: %v", err)
	}
	st := h.sup.Status()
	if st.State != connection.StateConnected || st.URL != srv.URL() || st.Generation != 1 {
		t.Fatalf("status: got %+v", st)
	}

	h.shutdown()
	natstest.WaitFor[connection.Closed](t, h.rec, 0, time.Second, func(e connection.Closed) bool { return e.Err == nil })
	select {
	case <-ci.gone:
	default:
		t.Fatal("the stopped connection's channel is still open")
	}
	if !ci.nc.IsClosed() {
		t.Fatal("connection not closed after shutdown")
	}
	if st := h.sup.Status(); st.State != connection.StateStopped {
		t.Fatalf("state after shutdown: got %s, want stopped", st.State)
	}
}

func TestReconnectsAfterServerRestart(t *testing.T) {
	t.Parallel()
	srv := natstest.RunServer(t)
	h := newHarness(t, connection.Config{Servers: []string{srv.URL()}})
	ci := h.conn()
	sub, err := ci.nc.SubscribeSync("restart.test")
	if err != nil {
		t.Fatal(err)
	}

	from := h.rec.Len()
	srv.Restart()
	natstest.WaitFor[connection.Disconnected](t, h.rec, from, 10*time.Second, nil)
	ev, _ := natstest.WaitFor[connection.Reconnected](t, h.rec, from, 10*time.Second, nil)
	if ev.URL != srv.URL() || ev.Reconnects != 1 || ev.Generation != 1 {
		t.Fatalf("reconnected event: got %+v", ev)
	}
	// The same connection carries on: nats.go re-subscribed.
	again := h.conn()
	if again.nc != ci.nc {
		t.Fatal("a reconnect replaced the *nats.Conn")
	}
	if err := ci.nc.Publish("restart.test", []byte("hi")); err != nil {
		t.Fatal(err)
	}
	if m, err := sub.NextMsg(5 * time.Second); err != nil || string(m.Data) != "hi" {
		t.Fatalf("after reconnect: got %v, %v", m, err)
	}
	h.shutdown()
}

func TestConnectsWhenServerComesUpLater(t *testing.T) {
	t.Parallel()
	srv := natstest.RunServer(t)
	srv.Shutdown() // its port is now known and free
	h := newHarness(t, connection.Config{Servers: []string{srv.URL()}})

	// The client keeps trying while nothing listens.
	natstest.WaitFor[connection.ReconnectFailed](t, h.rec, 0, 10*time.Second, nil)
	if st := h.sup.Status(); st.State != connection.StateConnecting {
		t.Fatalf("state with no server: got %s, want connecting", st.State)
	}
	srv.Start()
	ci := h.conn()
	if _, err := ci.nc.RTT(); err != nil {
		t.Fatal(err)
	}
	ev, _ := natstest.WaitFor[connection.Connected](t, h.rec, 0, time.Second, nil)
	if ev.Generation != 1 {
		t.Fatalf("got generation %d, want the first connection to have connected", ev.Generation)
	}
	h.shutdown()
}

func TestReplacesConnectionClosedForGood(t *testing.T) {
	t.Parallel()
	srv := natstest.RunServer(t)
	dep := newDependent()
	h := newHarness(t, connection.Config{
		Servers:       []string{srv.URL()},
		MaxReconnects: 2,
		ReconnectWait: 10 * time.Millisecond,
	}, dep)
	first := dep.next(t)

	srv.Shutdown()
	closed, _ := natstest.WaitFor[connection.Closed](t, h.rec, 0, 10*time.Second, nil)
	if !errors.Is(closed.Err, nats.ErrNoServers) {
		t.Fatalf("closed with %v, want nats.ErrNoServers", closed.Err)
	}
	failed, _ := natstest.WaitFor[supervisor.ChildFailed](t, h.rec, 0, 10*time.Second, nil)
	if failed.Child != "connection" || !errors.Is(failed.Err, connection.ErrClosed) {
		t.Fatalf("child failed: got %+v, want connection failing with ErrClosed", failed)
	}
	select {
	case <-first.gone:
	case <-time.After(5 * time.Second):
		t.Fatal("the closed connection's channel was not closed")
	}

	srv.Start()
	second := dep.next(t)
	if second.nc == first.nc {
		t.Fatal("the dependent got the closed connection again")
	}
	if _, err := second.nc.RTT(); err != nil {
		t.Fatalf("new connection: %v", err)
	}
	if st := h.sup.Status(); st.Generation < 2 || st.State != connection.StateConnected {
		t.Fatalf("status: got %+v, want a later generation, connected", st)
	}
	h.shutdown()
}

func TestDetectsHalfOpenConnection(t *testing.T) {
	t.Parallel()
	srv := natstest.RunServer(t)
	proxy := natstest.NewProxy(t, srv.URL())
	// Defaults for ping interval and outstanding pings: the bound under
	// test is theirs.
	h := newHarness(t, connection.Config{Servers: []string{proxy.URL(), srv.URL()}, NoRandomize: true})
	h.conn()
	if got := h.sup.Status().URL; got != proxy.URL() {
		t.Fatalf("connected to %s, want the proxy %s first", got, proxy.URL())
	}

	from := h.rec.Len()
	paused := time.Now()
	proxy.Pause()
	dis, _ := natstest.WaitFor[connection.Disconnected](t, h.rec, from, 30*time.Second, nil)
	re, _ := natstest.WaitFor[connection.Reconnected](t, h.rec, from, 30*time.Second, nil)
	took := time.Since(paused)
	t.Logf("stale connection noticed and replaced after %v", took)

	if !errors.Is(dis.Err, nats.ErrStaleConnection) {
		t.Fatalf("disconnected with %v, want nats.ErrStaleConnection", dis.Err)
	}
	if re.URL != srv.URL() {
		t.Fatalf("reconnected to %s, want %s", re.URL, srv.URL())
	}
	// Pings go out every 5s; the third unanswered one declares the
	// connection stale: 5s × (2+1), plus scheduling slack.
	if bound := 5*time.Second*3 + 2*time.Second; took > bound {
		t.Fatalf("half-open connection noticed after %v, want within %v", took, bound)
	}
	proxy.Restore()
	h.shutdown()
}

func TestWrongCredentials(t *testing.T) {
	t.Parallel()
	const password = "wrong-pw-7f3a9c"
	srv := natstest.RunServer(t, natstest.WithUser("app", "right-pw"))
	proxy := natstest.NewProxy(t, srv.URL())
	h := newHarness(t, connection.Config{
		Servers: []string{proxy.URL()},
		Auth:    connection.AuthConfig{User: "app", Password: password},
	})

	// Three failures of the connection, each restart later than the last.
	var delays []time.Duration
	from := 0
	for range 3 {
		ev, i := natstest.WaitFor[supervisor.ChildFailed](t, h.rec, from, 20*time.Second, nil)
		if !strings.Contains(strings.ToLower(ev.Err.Error()), "authorization violation") {
			t.Fatalf("failure: got %v, want an authorization violation", ev.Err)
		}
		delays = append(delays, ev.RestartIn)
		from = i + 1
	}
	attempts := proxy.Accepted()
	t.Logf("restart delays %v, %d connection attempts", delays, attempts)
	if !(delays[0] < delays[1] && delays[1] < delays[2]) {
		t.Fatalf("restart delays %v do not grow", delays)
	}
	// nats.go gives up on the second identical auth error, so each
	// connection made at most a few attempts before the tree backed off.
	if attempts > 3*3 {
		t.Fatalf("%d connection attempts for 3 failures: a tight loop", attempts)
	}
	if st := h.sup.Status(); !strings.Contains(strings.ToLower(st.LastError), "authorization violation") {
		t.Fatalf("status last error: got %q", st.LastError)
	}
	h.shutdown()

	assertNoSecretLogged(t, h, password)
}

func TestCredentialsInURLAreRedacted(t *testing.T) {
	t.Parallel()
	const password = "url-pw-1c2d3e"
	srv := natstest.RunServer(t, natstest.WithUser("app", password))
	url := "nats://app:" + password + "@" + strings.TrimPrefix(srv.URL(), "nats://")
	h := newHarness(t, connection.Config{Servers: []string{url}})
	h.conn()
	ev, _ := natstest.WaitFor[connection.Connected](t, h.rec, 0, 5*time.Second, nil)
	if want := "nats://app:redacted@" + strings.TrimPrefix(srv.URL(), "nats://"); ev.URL != want {
		t.Fatalf("connected URL: got %s, want %s", ev.URL, want)
	}
	// The status, which the ops endpoints serve, shows no user either.
	if st := h.sup.Status(); st.URL != srv.URL() {
		t.Fatalf("status URL: got %s, want %s", st.URL, srv.URL())
	}
	srv.Restart()
	natstest.WaitFor[connection.Reconnected](t, h.rec, 0, 10*time.Second, nil)
	h.shutdown()
	assertNoSecretLogged(t, h, password)
}

// assertNoSecretLogged checks every log line and event, message and fields.
func assertNoSecretLogged(t *testing.T, h *harness, secret string) {
	t.Helper()
	if h.logs.Len() == 0 {
		t.Fatal("nothing was logged; the check would prove nothing")
	}
	for _, e := range h.logs.All() {
		line := e.Message
		for k, v := range e.ContextMap() {
			line += " " + k + "=" + stringify(v)
		}
		if strings.Contains(line, secret) {
			t.Fatalf("secret in log line: %s", line)
		}
	}
	for _, ev := range h.rec.Events() {
		if s := stringify(ev); strings.Contains(s, secret) {
			t.Fatalf("secret in event %s: %s", ev.Kind(), s)
		}
	}
}

func TestReconnectsAfterKill9(t *testing.T) {
	t.Parallel()
	proc := natstest.StartProcess(t)
	h := newHarness(t, connection.Config{Servers: []string{proc.URL()}})
	ci := h.conn()

	from := h.rec.Len()
	proc.Kill()
	natstest.WaitFor[connection.Disconnected](t, h.rec, from, 10*time.Second, nil)
	proc.Start()
	natstest.WaitFor[connection.Reconnected](t, h.rec, from, 20*time.Second, nil)
	if _, err := ci.nc.RTT(); err != nil {
		t.Fatalf("after kill -9 and restart: %v", err)
	}
	h.shutdown()
}

func TestMovesToAnotherNodeWhenItsNodeStops(t *testing.T) {
	t.Parallel()
	cluster := natstest.RunCluster(t, 3)
	h := newHarness(t, connection.Config{Servers: strings.Split(cluster.URLs(), ",")})
	ci := h.conn()
	before := ci.nc.ConnectedServerName()
	node := cluster.Node(before)
	if node == nil {
		t.Fatalf("connected to unknown node %q", before)
	}

	from := h.rec.Len()
	node.Shutdown()
	ev, _ := natstest.WaitFor[connection.Reconnected](t, h.rec, from, 20*time.Second, nil)
	if ev.ServerName == before || ev.ServerName == "" {
		t.Fatalf("reconnected to %q, want another node than %q", ev.ServerName, before)
	}
	if _, err := ci.nc.RTT(); err != nil {
		t.Fatal(err)
	}
	h.shutdown()
}

func TestDrainsWithinTimeoutWhenServerIsGone(t *testing.T) {
	t.Parallel()
	srv := natstest.RunServer(t)
	h := newHarness(t, connection.Config{Servers: []string{srv.URL()}})
	h.conn()
	srv.Shutdown()
	natstest.WaitFor[connection.Disconnected](t, h.rec, 0, 10*time.Second, nil)
	stopped := make(chan error, 1)
	go func() { stopped <- h.stopErr() }()
	select {
	case err := <-stopped:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("shutdown while reconnecting did not return")
	}
}

func TestStopIsBoundedWithoutClosedCallbacks(t *testing.T) {
	t.Parallel()
	srv := natstest.RunServer(t)
	h := newHarness(t, connection.Config{
		Servers:      []string{srv.URL()},
		DrainTimeout: 200 * time.Millisecond,
		Options:      []nats.Option{nats.NoCallbacksAfterClientClose()},
	})
	ci := h.conn()
	// A subscriber that never returns keeps the drain from finishing.
	block := make(chan struct{})
	t.Cleanup(func() { close(block) })
	if _, err := ci.nc.Subscribe("stuck", func(*nats.Msg) { <-block }); err != nil {
		t.Fatal(err)
	}
	if err := ci.nc.Publish("stuck", nil); err != nil {
		t.Fatal(err)
	}
	if err := ci.nc.Flush(); err != nil {
		t.Fatal(err)
	}
	stopped := make(chan error, 1)
	go func() { stopped <- h.stopErr() }()
	select {
	case err := <-stopped:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("stop did not return")
	}
}

func TestConnNeverHandsOutAClosedConnection(t *testing.T) {
	t.Parallel()
	srv := natstest.RunServer(t)
	h := newHarness(t, connection.Config{Servers: []string{srv.URL()}})
	first := h.conn()
	first.nc.Close()
	select {
	case <-first.gone:
	case <-time.After(5 * time.Second):
		t.Fatal("the closed connection's channel stayed open")
	}
	next := h.conn()
	if next.nc == first.nc || next.nc.IsClosed() {
		t.Fatal("Conn returned the closed connection")
	}
	h.shutdown()
}
