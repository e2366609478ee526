package connection_test

import (
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"

	"github.com/corral-go/corral/connection"
	"github.com/corral-go/corral/internal/natstest"
)

func TestReportsDiscoveredServers(t *testing.T) {
	t.Parallel()
	cluster := natstest.RunCluster(t, 3)
	// n3 is down while the client connects to n1, so its URL is new to
	// the client when n1 announces it.
	cluster.Stop(2)
	h := newHarness(t, connection.Config{Servers: []string{cluster.Nodes[0].URL()}})
	h.conn()
	from := h.rec.Len()
	cluster.Restart(2)
	ev, _ := natstest.WaitFor[connection.DiscoveredServers](t, h.rec, from, 20*time.Second, nil)
	if !slices.Contains(ev.URLs, cluster.Nodes[2].URL()) {
		t.Fatalf("discovered %v, want it to include n3 at %s", ev.URLs, cluster.Nodes[2].URL())
	}
	h.shutdown()
}

func TestReportsLameDuck(t *testing.T) {
	t.Parallel()
	srv := natstest.RunServer(t, func(o *server.Options) {
		o.LameDuckDuration = time.Second
		o.LameDuckGracePeriod = 100 * time.Millisecond
	})
	h := newHarness(t, connection.Config{Servers: []string{srv.URL()}})
	h.conn()
	done := make(chan struct{})
	go func() {
		defer close(done)
		srv.Raw().LameDuckShutdown()
	}()
	ev, _ := natstest.WaitFor[connection.LameDuck](t, h.rec, 0, 10*time.Second, nil)
	if ev.URL != srv.URL() {
		t.Fatalf("lame duck from %s, want %s", ev.URL, srv.URL())
	}
	<-done
	h.shutdown()
}

func TestReportsSlowConsumer(t *testing.T) {
	t.Parallel()
	srv := natstest.RunServer(t)
	h := newHarness(t, connection.Config{Servers: []string{srv.URL()}})
	ci := h.conn()
	block := make(chan struct{})
	var once sync.Once
	release := func() { once.Do(func() { close(block) }) }
	t.Cleanup(release)
	sub, err := ci.nc.Subscribe("slow.test", func(*nats.Msg) { <-block })
	if err != nil {
		t.Fatal(err)
	}
	if err := sub.SetPendingLimits(10, -1); err != nil {
		t.Fatal(err)
	}
	for range 100 {
		if err := ci.nc.Publish("slow.test", []byte("x")); err != nil {
			t.Fatal(err)
		}
	}
	if err := ci.nc.Flush(); err != nil {
		t.Fatal(err)
	}
	ev, _ := natstest.WaitFor[connection.SlowConsumer](t, h.rec, 0, 10*time.Second, nil)
	release()
	if ev.Subject != "slow.test" || ev.Dropped == 0 {
		t.Fatalf("slow consumer event: got %+v", ev)
	}
	h.shutdown()
}

func TestReportsAsyncErrors(t *testing.T) {
	t.Parallel()
	srv := natstest.RunServer(t, func(o *server.Options) {
		o.Users = []*server.User{{Username: "app", Password: "pw", Permissions: &server.Permissions{
			Publish: &server.SubjectPermission{Allow: []string{"allowed.>"}},
		}}}
	})
	h := newHarness(t, connection.Config{Servers: []string{srv.URL()}, Auth: connection.AuthConfig{User: "app", Password: "pw"}})
	ci := h.conn()
	if err := ci.nc.Publish("forbidden.x", nil); err != nil {
		t.Fatal(err)
	}
	ev, _ := natstest.WaitFor[connection.AsyncError](t, h.rec, 0, 10*time.Second, nil)
	if !errors.Is(ev.Err, nats.ErrPermissionViolation) || ev.URL != srv.URL() {
		t.Fatalf("async error event: got %+v", ev)
	}
	h.shutdown()
}

// A dependent sees the publish permission violations nats.go reports only
// asynchronously, until it releases its hook.
func TestOnAsyncErrorReachesDependents(t *testing.T) {
	t.Parallel()
	srv := natstest.RunServer(t, func(o *server.Options) {
		o.Users = []*server.User{{Username: "app", Password: "pw", Permissions: &server.Permissions{
			Publish: &server.SubjectPermission{Allow: []string{"allowed.>"}},
		}}}
	})
	h := newHarness(t, connection.Config{Servers: []string{srv.URL()}, Auth: connection.AuthConfig{User: "app", Password: "pw"}})
	type report struct {
		nc  *nats.Conn
		err error
	}
	got := make(chan report, 4)
	release := h.sup.OnAsyncError(func(nc *nats.Conn, err error) { got <- report{nc, err} })
	ci := h.conn()
	if err := ci.nc.Publish("forbidden.x", nil); err != nil {
		t.Fatal(err)
	}
	select {
	case r := <-got:
		if r.nc != ci.nc || !errors.Is(r.err, nats.ErrPermissionViolation) ||
			!strings.Contains(r.err.Error(), `Publish to "forbidden.x"`) {
			t.Fatalf("hook got %v on %p, want the violation on %p", r.err, r.nc, ci.nc)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the hook saw no async error")
	}
	release()
	// nats.go runs its callbacks one after another: once the second
	// violation's event is recorded, the first one's callback, which would
	// call the hook after its event, has returned.
	from := h.rec.Len()
	for _, subj := range []string{"forbidden.y", "forbidden.z"} {
		if err := ci.nc.Publish(subj, nil); err != nil {
			t.Fatal(err)
		}
	}
	natstest.WaitFor[connection.AsyncError](t, h.rec, from, 10*time.Second, func(e connection.AsyncError) bool {
		return strings.Contains(e.Err.Error(), "forbidden.z")
	})
	select {
	case r := <-got:
		t.Fatalf("released hook called with %v", r.err)
	default:
	}
	h.shutdown()
}
