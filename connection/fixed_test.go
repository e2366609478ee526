package connection_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/corral-go/corral/connection"
	"github.com/corral-go/corral/internal/natstest"
)

// A Fixed hears its connection reconnect and close, and still calls the
// handlers the application set on it.
func TestFixedFollowsTheApplicationsConnection(t *testing.T) {
	t.Parallel()
	srv := natstest.RunServer(t)
	var theirs atomic.Int32
	nc, err := nats.Connect(srv.URL(), nats.ReconnectWait(10*time.Millisecond),
		nats.ReconnectHandler(func(*nats.Conn) { theirs.Add(1) }),
		nats.ClosedHandler(func(*nats.Conn) { theirs.Add(1) }))
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	f := connection.NewFixed(nc)
	var src connection.Source = f
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	got, gone, err := src.Conn(ctx)
	if err != nil || got != nc {
		t.Fatalf("Conn: got %v, %v, want the application's connection", got, err)
	}
	st, changed := src.Observe()
	if st.State != connection.StateConnected || st.URL != srv.URL() {
		t.Fatalf("status %+v, want connected to %s", st, srv.URL())
	}

	// Watch's channel closes at the disconnect, then at the reconnect.
	srv.Shutdown()
	select {
	case <-changed:
	case <-ctx.Done():
		t.Fatal("Watch's channel stayed open across a disconnect")
	}
	if st, changed = src.Observe(); st.State != connection.StateReconnecting {
		t.Fatalf("after the disconnect: %+v, want reconnecting", st)
	}
	srv.Start()
	select {
	case <-changed:
	case <-ctx.Done():
		t.Fatal("Watch's channel stayed open across a reconnect")
	}
	if st := f.Status(); st.State != connection.StateConnected || st.Stats.Reconnects != 1 {
		t.Fatalf("after the reconnect: %+v, want connected with one reconnect", st)
	}

	nc.Close()
	select {
	case <-gone:
	case <-ctx.Done():
		t.Fatal("Conn's channel stayed open after the connection closed")
	}
	if _, _, err := src.Conn(ctx); !errors.Is(err, connection.ErrClosed) || !errors.Is(err, nats.ErrConnectionClosed) {
		t.Fatalf("Conn after close: got %v, want ErrClosed and nats.ErrConnectionClosed", err)
	}
	natstest.Eventually(t, 10*time.Second, func() bool { return theirs.Load() == 2 }, func() string {
		return "the application's reconnect and closed handlers were not both called"
	})
}
