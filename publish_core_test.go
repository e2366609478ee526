package corral_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/corral-go/corral"
	"github.com/corral-go/corral/connection"
	"github.com/corral-go/corral/internal/natstest"
)

// coreStoreServer runs a server whose stream CORE keeps every message
// published on core.>, across restarts, so that a test reads back what
// core publishing delivered.
func coreStoreServer(t *testing.T) *natstest.Server {
	t.Helper()
	srv := natstest.RunServer(t)
	nc := plainConn(t, srv.URL())
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: "CORE", Subjects: []string{"core.>"}}); err != nil {
		t.Fatal(err)
	}
	return srv
}

func plainConn(t *testing.T, url string) *nats.Conn {
	t.Helper()
	nc, err := nats.Connect(url)
	if err != nil {
		t.Fatal(err)
	}
	return nc
}

// storedCore returns the messages CORE holds, in order.
func storedCore(t *testing.T, srv *natstest.Server) []*jetstream.RawStreamMsg {
	t.Helper()
	nc := plainConn(t, srv.URL())
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	s, err := js.Stream(ctx, "CORE")
	if err != nil {
		t.Fatal(err)
	}
	var out []*jetstream.RawStreamMsg
	for seq := uint64(1); seq <= s.CachedInfo().State.LastSeq; seq++ {
		m, err := s.GetMsg(ctx, seq)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, m)
	}
	return out
}

// waitCoreStored waits until CORE holds exactly the data want, in order.
func waitCoreStored(t *testing.T, srv *natstest.Server, want ...string) []*jetstream.RawStreamMsg {
	t.Helper()
	var got []*jetstream.RawStreamMsg
	data := func() []string {
		var out []string
		for _, m := range got {
			out = append(out, string(m.Data))
		}
		return out
	}
	natstest.Eventually(t, 20*time.Second, func() bool {
		got = storedCore(t, srv)
		return len(got) >= len(want)
	}, func() string { return fmt.Sprintf("stream CORE holds %q, want %q", data(), want) })
	if !slices.Equal(data(), want) {
		t.Fatalf("stream CORE holds %q, want %q", data(), want)
	}
	return got
}

// outageClient runs a Client on srv that reconnects quickly.
func outageClient(t *testing.T, srv *natstest.Server, change func(*corral.Config)) *corral.Client {
	t.Helper()
	c := newOutageClient(t, srv, change)
	running(t, c)
	return c
}

// newOutageClient is outageClient not yet running, for handlers to be
// bound first.
func newOutageClient(t *testing.T, srv *natstest.Server, change func(*corral.Config)) *corral.Client {
	t.Helper()
	cfg := corral.Config{Name: "outage"}
	cfg.Connection.Servers = []string{srv.URL()}
	cfg.Connection.ReconnectWait = 20 * time.Millisecond
	cfg.Connection.MaxReconnectWait = 100 * time.Millisecond
	cfg.Connection.ReconnectJitter = 10 * time.Millisecond
	if change != nil {
		change(&cfg)
	}
	c, err := corral.New(cfg, embeddedServer)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// waitConnState waits until c's connection status satisfies ok.
func waitConnState(t *testing.T, c *corral.Client, what string, ok func(connection.Status) bool) {
	t.Helper()
	deadline := time.NewTimer(20 * time.Second)
	defer deadline.Stop()
	for {
		st, changed := c.ConnectionSupervisor().Observe()
		if ok(st) {
			return
		}
		select {
		case <-changed:
		case <-deadline.C:
			t.Fatalf("connection not %s: %+v", what, st)
		}
	}
}

func reconnecting(st connection.Status) bool { return st.State == connection.StateReconnecting }

// While nats.go reconnects, core messages go to its reconnect buffer and
// PublishCore returns: the server stays down until every call returned,
// and a call that waited for the connection would end at its deadline.
// They are delivered once the server is back, headers included.
func TestPublishCoreBuffersWhileReconnecting(t *testing.T) {
	t.Parallel()
	srv := coreStoreServer(t)
	c := outageClient(t, srv, nil)
	waitConn(t, c)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := c.PublishCore(ctx, "core.before", []byte("before")); err != nil {
		t.Fatal(err)
	}
	waitCoreStored(t, srv, "before")

	srv.Shutdown()
	waitConnState(t, c, "reconnecting", reconnecting)
	for i := range 3 {
		if err := c.PublishCore(ctx, "core.during", []byte(fmt.Sprint("during ", i))); err != nil {
			t.Fatalf("PublishCore while reconnecting: %v", err)
		}
	}
	msg := &nats.Msg{Subject: "core.during", Data: []byte("with headers"), Header: nats.Header{"Trace": {"t-1"}}}
	if err := c.PublishCoreMsg(ctx, msg); err != nil {
		t.Fatalf("PublishCoreMsg while reconnecting: %v", err)
	}
	if ctx.Err() != nil {
		t.Fatalf("the publishes waited for the connection: %v", ctx.Err())
	}
	srv.Start()
	got := waitCoreStored(t, srv, "before", "during 0", "during 1", "during 2", "with headers")
	if h := got[4].Header.Get("Trace"); h != "t-1" {
		t.Fatalf("header Trace: got %q, want t-1", h)
	}
}

// With the reconnect buffer full or turned off, PublishCore fails at once
// while reconnecting, with an error that matches ErrDisconnected and
// nats.ErrReconnectBufExceeded and names the setting; what the buffer
// took is delivered once the server is back, and publishing works again.
func TestPublishCoreFailsAtOnceWhenTheReconnectBufferCannotTakeIt(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name     string
		size     corral.ByteSize
		says     string
		accepted bool // whether some messages fit first
	}{
		{"disabled", -1, "the reconnect buffer is disabled (connection.reconnect_buf_size: -1)", false},
		{"full", 1024, "the reconnect buffer is full (connection.reconnect_buf_size)", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			srv := coreStoreServer(t)
			c := outageClient(t, srv, func(cfg *corral.Config) { cfg.Connection.ReconnectBufSize = tc.size })
			waitConn(t, c)
			srv.Shutdown()
			waitConnState(t, c, "reconnecting", reconnecting)

			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			var want []string
			var err error
			for i := range 1000 {
				data := fmt.Sprintf("%03d %s", i, strings.Repeat("x", 96))
				if err = c.PublishCore(ctx, "core.during", []byte(data)); err != nil {
					break
				}
				want = append(want, data)
			}
			if ctx.Err() != nil {
				t.Fatalf("PublishCore waited for the connection: %v", err)
			}
			if !errors.Is(err, corral.ErrDisconnected) || !errors.Is(err, nats.ErrReconnectBufExceeded) {
				t.Fatalf("PublishCore with the buffer %s: got %v, want ErrDisconnected and nats.ErrReconnectBufExceeded", tc.name, err)
			}
			wantText := `corral: not connected: publish to "core.during" while reconnecting: ` + tc.says
			if err.Error() != wantText {
				t.Fatalf("error: got %q, want %q", err, wantText)
			}
			if got := len(want) > 0; got != tc.accepted {
				t.Fatalf("%d messages accepted before the error", len(want))
			}

			srv.Start()
			waitConnState(t, c, "connected", func(st connection.Status) bool { return st.State == connection.StateConnected })
			if err := c.PublishCore(ctx, "core.after", []byte("after")); err != nil {
				t.Fatalf("PublishCore once reconnected: %v", err)
			}
			waitCoreStored(t, srv, append(want, "after")...)
		})
	}
}

// Before the first connection, and once a connection closed for good
// until its replacement connects, PublishCore waits within ctx: it ends
// with ctx's error while the server is down (nothing is sent later), and
// succeeds once the server is up.
func TestPublishCoreWaitsForAConnection(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		change func(*corral.Config)
		down   func(t *testing.T, c *corral.Client, srv *natstest.Server)
	}{
		{"before the first connection", nil, func(t *testing.T, c *corral.Client, srv *natstest.Server) {
			// The Client runs with the server already down.
		}},
		{"closed for good until replaced", func(cfg *corral.Config) {
			cfg.Connection.MaxReconnects = 1
			cfg.Connection.Restart.FailureThreshold = 1000
			cfg.Connection.Restart.RestartDelay = 10 * time.Millisecond
			cfg.Connection.Restart.Backoff = 100 * time.Millisecond
		}, func(t *testing.T, c *corral.Client, srv *natstest.Server) {
			srv.Start()
			waitConn(t, c)
			gen := c.ConnectionSupervisor().Status().Generation
			srv.Shutdown()
			waitConnState(t, c, "closed and being replaced", func(st connection.Status) bool {
				return st.Generation > gen && (st.State == connection.StateClosed || st.State == connection.StateConnecting)
			})
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			srv := coreStoreServer(t)
			srv.Shutdown()
			c := outageClient(t, srv, tc.change)
			tc.down(t, c, srv)

			short, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
			defer cancel()
			if err := c.PublishCore(short, "core.lost", []byte("lost")); !errors.Is(err, context.DeadlineExceeded) {
				t.Fatalf("PublishCore with no connection: got %v, want it to wait until its ctx ends", err)
			}
			long, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			done := make(chan error, 1)
			go func() { done <- c.PublishCore(long, "core.waited", []byte("waited")) }()
			srv.Start()
			if err := <-done; err != nil {
				t.Fatalf("PublishCore once the server is up: %v", err)
			}
			waitCoreStored(t, srv, "waited")
		})
	}
}
