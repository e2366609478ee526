package connection_test

import (
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/corral-go/corral/connection"
	"github.com/corral-go/corral/internal/natstest"
	"github.com/corral-go/corral/supervisor"
)

// With reconnect on (the default) nats.go brings the same connection back
// after the server restarts. With it off, the drop closes the connection
// for good and the restart policy decides: a permanent child makes a new
// connection once the server is back, a temporary one stays closed.
func TestReconnectSwitch(t *testing.T) {
	t.Parallel()
	off := false
	restartable := supervisor.Policy{RestartDelay: 10 * time.Millisecond, Backoff: time.Second}
	t.Run("on by default: nats.go reconnects", func(t *testing.T) {
		t.Parallel()
		srv := natstest.RunServer(t)
		h := newHarnessPolicy(t, connection.Config{Servers: []string{srv.URL()}}, restartable)
		first := h.conn()
		from := h.rec.Len()
		srv.Restart()
		natstest.WaitFor[connection.Reconnected](t, h.rec, from, 10*time.Second, func(e connection.Reconnected) bool { return e.Generation == 1 })
		if again := h.conn(); again.nc != first.nc {
			t.Fatal("the connection was replaced, want it reconnected")
		}
		if failed := natstest.All[supervisor.ChildFailed](h.rec); len(failed) != 0 {
			t.Fatalf("the connection child failed: %+v", failed)
		}
		h.shutdown()
	})
	t.Run("off, permanent: the tree makes a new connection", func(t *testing.T) {
		t.Parallel()
		srv := natstest.RunServer(t)
		h := newHarnessPolicy(t, connection.Config{Servers: []string{srv.URL()}, Reconnect: &off}, restartable)
		first := h.conn()
		srv.Shutdown()
		closed, _ := natstest.WaitFor[connection.Closed](t, h.rec, 0, 10*time.Second, nil)
		if closed.Generation != 1 || closed.Err == nil {
			t.Fatalf("closed: got %+v, want the first connection closed with its cause", closed)
		}
		failed, _ := natstest.WaitFor[supervisor.ChildFailed](t, h.rec, 0, 10*time.Second, nil)
		if failed.Child != "connection" || !errors.Is(failed.Err, connection.ErrClosed) || !failed.Restarting {
			t.Fatalf("child failed: got %+v, want connection failing with ErrClosed, restarting", failed)
		}
		srv.Start()
		second := h.conn()
		if second.nc == first.nc {
			t.Fatal("Conn returned the closed connection")
		}
		assertNoReconnectOf(t, h, 1)
		if st := h.sup.Status(); st.Generation < 2 || st.State != connection.StateConnected {
			t.Fatalf("status: got %+v, want a later generation, connected", st)
		}
		h.shutdown()
	})
	t.Run("off, temporary: the connection stays closed", func(t *testing.T) {
		t.Parallel()
		srv := natstest.RunServer(t)
		h := newHarnessPolicy(t, connection.Config{Servers: []string{srv.URL()}, Reconnect: &off},
			supervisor.Policy{Mode: supervisor.Temporary})
		h.conn()
		srv.Shutdown()
		stopped, _ := natstest.WaitFor[supervisor.ChildStopped](t, h.rec, 0, 10*time.Second, nil)
		if stopped.Child != "connection" || !errors.Is(stopped.Err, connection.ErrClosed) {
			t.Fatalf("child stopped: got %+v, want connection stopped with ErrClosed", stopped)
		}
		srv.Start()
		for _, ch := range h.tree.Status() {
			if ch.Name == "connection" && ch.State != supervisor.Failed {
				t.Fatalf("connection child is %s, want failed (not restarted)", ch.State)
			}
		}
		if st := h.sup.Status(); st.State != connection.StateClosed || st.Generation != 1 || st.LastError == "" {
			t.Fatalf("status: got %+v, want the first connection closed, with its error", st)
		}
		assertNoReconnectOf(t, h, 1)
		h.shutdown()
	})
}

// assertNoReconnectOf checks that nats.go never tried to reconnect
// connection gen.
func assertNoReconnectOf(t *testing.T, h *harness, gen uint64) {
	t.Helper()
	for _, e := range natstest.All[connection.ReconnectFailed](h.rec) {
		if e.Generation == gen {
			t.Fatalf("nats.go tried to reconnect connection %d: %+v", gen, e)
		}
	}
	for _, e := range natstest.All[connection.Reconnected](h.rec) {
		if e.Generation == gen {
			t.Fatalf("nats.go reconnected connection %d: %+v", gen, e)
		}
	}
}

// The servers a cluster announces are in Status, and a replacement
// connection dials them: with the only configured server gone for good,
// it connects through another node.
func TestReplacementDialsDiscoveredServers(t *testing.T) {
	t.Parallel()
	cluster := natstest.RunCluster(t, 3)
	seed := cluster.Nodes[0]
	others := []string{cluster.Nodes[1].URL(), cluster.Nodes[2].URL()}
	off := false
	h := newHarness(t, connection.Config{Servers: []string{seed.URL()}, Reconnect: &off})
	first := h.conn()
	natstest.Eventually(t, 10*time.Second, func() bool {
		d := h.sup.Status().Discovered
		return slices.Contains(d, others[0]) && slices.Contains(d, others[1])
	}, func() string {
		return "discovered " + strings.Join(h.sup.Status().Discovered, ",") + ", want " + strings.Join(others, ",")
	})
	if d := h.sup.Status().Discovered; slices.Contains(d, seed.URL()) {
		t.Fatalf("discovered %v includes the configured server", d)
	}

	cluster.Stop(0) // for good
	natstest.WaitFor[connection.Closed](t, h.rec, 0, 20*time.Second, func(e connection.Closed) bool { return e.Generation == 1 })
	second := h.conn()
	if second.nc == first.nc {
		t.Fatal("Conn returned the closed connection")
	}
	if name := second.nc.ConnectedServerName(); name != "n2" && name != "n3" {
		t.Fatalf("replacement connected to %q, want n2 or n3", name)
	}
	st := h.sup.Status()
	if st.Generation < 2 || !slices.Contains(others, st.URL) {
		t.Fatalf("status: got generation %d at %s, want a replacement at one of %v", st.Generation, st.URL, others)
	}
	// Kept by the replacement, for the one after it.
	if d := st.Discovered; !slices.Contains(d, others[0]) || !slices.Contains(d, others[1]) {
		t.Fatalf("replacement's discovered %v, want %v kept", d, others)
	}
	h.shutdown()
}

// Over TLS, verified with only a CA file, the connection comes back after
// the server restarts, still over TLS and still delivering.
func TestReconnectsOverTLSAfterServerRestart(t *testing.T) {
	t.Parallel()
	files := natstest.NewSelfSignedTLSFiles(t)
	srv := natstest.RunServer(t, natstest.WithTLS(t, files, false))
	url := "tls://" + strings.TrimPrefix(srv.URL(), "nats://")
	h := newHarness(t, connection.Config{Servers: []string{url}, TLS: connection.TLSConfig{CAFile: files.CAFile}})
	ci := h.conn()
	if _, err := ci.nc.TLSConnectionState(); err != nil {
		t.Fatalf("not a TLS connection: %v", err)
	}
	sub, err := ci.nc.SubscribeSync("tls.restart")
	if err != nil {
		t.Fatal(err)
	}

	from := h.rec.Len()
	srv.Restart()
	natstest.WaitFor[connection.Disconnected](t, h.rec, from, 10*time.Second, nil)
	re, _ := natstest.WaitFor[connection.Reconnected](t, h.rec, from, 20*time.Second, nil)
	if re.Generation != 1 || re.URL != url {
		t.Fatalf("reconnected: got %+v, want connection 1 back at %s", re, url)
	}
	if _, err := ci.nc.TLSConnectionState(); err != nil {
		t.Fatalf("reconnected without TLS: %v", err)
	}
	if err := ci.nc.Publish("tls.restart", []byte("hi")); err != nil {
		t.Fatal(err)
	}
	if m, err := sub.NextMsg(5 * time.Second); err != nil || string(m.Data) != "hi" {
		t.Fatalf("after reconnect: got %v, %v", m, err)
	}
	h.shutdown()
}

// Servers are shuffled by default, so that clients spread over them, and
// tried in the order written with no_randomize.
func TestServerOrder(t *testing.T) {
	t.Parallel()
	const clients = 16 // all on the first of 3 by chance: p = 3^-16
	for _, inOrder := range []bool{false, true} {
		t.Run(map[bool]string{false: "shuffled", true: "no_randomize"}[inOrder], func(t *testing.T) {
			t.Parallel()
			servers := []*natstest.Server{natstest.RunServer(t), natstest.RunServer(t), natstest.RunServer(t)}
			urls := []string{servers[0].URL(), servers[1].URL(), servers[2].URL()}
			for range clients {
				h := newHarness(t, connection.Config{Servers: urls, NoRandomize: inOrder})
				h.conn()
			}
			var on []int
			for _, s := range servers {
				on = append(on, s.Raw().NumClients())
			}
			switch {
			case inOrder && on[0] != clients:
				t.Fatalf("clients per server %v, want all %d on the first", on, clients)
			case !inOrder && on[0] == clients:
				t.Fatalf("clients per server %v, want them spread", on)
			}
		})
	}
}
