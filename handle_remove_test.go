package corral_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/micro"

	"github.com/corral-go/corral"
	"github.com/corral-go/corral/consumer"
	"github.com/corral-go/corral/internal/natstest"
	"github.com/corral-go/corral/supervisor"
)

func liveClient(t *testing.T, srv *natstest.Server, yaml string) *corral.Client {
	t.Helper()
	cfg, err := corral.ParseConfig([]byte(yaml))
	if err != nil {
		t.Fatal(err)
	}
	cfg.Name = "live"
	cfg.Connection.Servers = []string{srv.URL()}
	c, err := corral.New(cfg, embeddedServer)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func liveEcho() consumer.RequestFunc {
	return func(_ context.Context, m *consumer.Msg) (consumer.Reply, error) {
		return consumer.Reply{Data: m.Data()}, nil
	}
}

func liveReady(t *testing.T, c *corral.Client) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := c.Ready(ctx); err != nil {
		t.Fatal(err)
	}
}

func liveConn(t *testing.T, url string) *nats.Conn {
	t.Helper()
	nc, err := nats.Connect(url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	return nc
}

func handlerNames(c *corral.Client) []string {
	var out []string
	for _, h := range c.Status().Handlers {
		out = append(out, h.Name)
	}
	return out
}

// With no handler declared before Run, a handler declared while it runs
// starts at once, answers requests and micro discovery, is removed with
// RemoveHandler, and stops with the Client.
func TestHandleWhileRunningWithNoneDeclared(t *testing.T) {
	t.Parallel()
	srv := natstest.RunServer(t)
	c := liveClient(t, srv, "name: live\n")
	stop := running(t, c)
	liveReady(t, c)
	if err := c.HandleRequest("late", consumer.Config{Subject: "late.x"}, liveEcho()); err != nil {
		t.Fatal(err)
	}
	liveReady(t, c)
	nc := liveConn(t, srv.URL())
	if reply, err := nc.Request("late.x", []byte("hi"), 5*time.Second); err != nil || string(reply.Data) != "hi" {
		t.Fatalf("request: got %v, %v", reply, err)
	}
	if tree := c.Status().String(); !strings.Contains(tree, "consumers") || !strings.Contains(tree, "late") {
		t.Fatalf("a handler declared while running is not drawn:\n%s", tree)
	}
	ping, _ := micro.ControlSubject(micro.PingVerb, "late", "")
	if _, err := nc.Request(ping, nil, 5*time.Second); err != nil {
		t.Fatalf("micro ping: %v", err)
	}
	if err := c.RemoveHandler(context.Background(), "late"); err != nil {
		t.Fatal(err)
	}
	if _, err := nc.Request("late.x", nil, 5*time.Second); !errors.Is(err, nats.ErrNoResponders) {
		t.Fatalf("request after RemoveHandler: got %v, want no responders", err)
	}
	if err := c.HandleRequest("again", consumer.Config{Subject: "again.x"}, liveEcho()); err != nil {
		t.Fatal(err)
	}
	liveReady(t, c)
	if err := stop(); err != nil {
		t.Fatalf("Run: %v", err)
	}
	st := c.Status()
	if len(st.Handlers) != 1 || st.Handlers[0].Child.State != supervisor.Stopped || len(st.Unstopped) != 0 {
		t.Fatalf("after Run: handlers %+v, unstopped %v", st.Handlers, st.Unstopped)
	}
	if _, err := nc.Request("again.x", nil, 5*time.Second); !errors.Is(err, nats.ErrNoResponders) {
		t.Fatalf("request after Run: got %v, want no responders", err)
	}
}

// With handlers declared before Run, one declared while it runs joins
// them under the tree's consumers child; one that would need longer to
// stop than the tree gives that child is refused, naming the setting.
func TestHandleWhileRunningJoinsTheTree(t *testing.T) {
	t.Parallel()
	srv := natstest.RunServer(t)
	c := liveClient(t, srv, "handlers:\n  first: {subject: first.x}\n")
	if err := c.HandleRequest("first", consumer.Config{}, liveEcho()); err != nil {
		t.Fatal(err)
	}
	stop := running(t, c)
	liveReady(t, c)
	if err := c.HandleRequest("second", consumer.Config{Subject: "second.x"}, liveEcho()); err != nil {
		t.Fatal(err)
	}
	liveReady(t, c)
	nc := liveConn(t, srv.URL())
	if _, err := nc.Request("second.x", nil, 5*time.Second); err != nil {
		t.Fatal(err)
	}
	if got := handlerNames(c); !slices.Equal(got, []string{"first", "second"}) {
		t.Fatalf("handlers: got %v", got)
	}
	slow := consumer.Config{Subject: "slow.x", Restart: supervisor.Policy{ShutdownTimeout: time.Hour}}
	err := c.HandleRequest("slow", slow, liveEcho())
	want := `corral: handler "slow": invalid config: restart.shutdown_timeout 1h0m0s: longer than the 10s the handlers were given when Run began; declare it before Run`
	if !errors.Is(err, corral.ErrInvalidConfig) || err.Error() != want {
		t.Fatalf("a handler slower to stop: got %v, want %s", err, want)
	}
	if err := stop(); err != nil {
		t.Fatalf("Run: %v", err)
	}
}

// While the Client stops, Handle and RemoveHandler fail with ErrStopping;
// once Run has returned, Handle declares for the next Run again, and a
// handler of the configuration that was removed is not reported unbound.
func TestHandleWhileStopping(t *testing.T) {
	t.Parallel()
	srv := natstest.RunServer(t)
	c := liveClient(t, srv, "handlers:\n  busy: {subject: busy.x, restart: {shutdown_timeout: 30s}}\n")
	started, release := make(chan struct{}), make(chan struct{})
	var once sync.Once
	if err := c.Handle("busy", consumer.Config{}, consumer.HandlerFunc(func(context.Context, *consumer.Msg) error {
		once.Do(func() { close(started) })
		<-release
		return nil
	})); err != nil {
		t.Fatal(err)
	}
	stop := running(t, c)
	liveReady(t, c)
	nc := liveConn(t, srv.URL())
	if err := nc.Publish("busy.x", nil); err != nil {
		t.Fatal(err)
	}
	<-started
	stopped := make(chan error, 1)
	go func() { stopped <- stop() }()
	// Run's ctx has ended once the handler has let go of its subject.
	natstest.Eventually(t, 20*time.Second, func() bool {
		_, err := nc.Request("busy.x", nil, 5*time.Second)
		return errors.Is(err, nats.ErrNoResponders)
	}, func() string { return "busy still subscribed" })
	if err := c.HandleRequest("late", consumer.Config{Subject: "late.y"}, liveEcho()); !errors.Is(err, corral.ErrStopping) {
		t.Fatalf("Handle while stopping: got %v, want ErrStopping", err)
	}
	if err := c.RemoveHandler(context.Background(), "busy"); !errors.Is(err, corral.ErrStopping) {
		t.Fatalf("RemoveHandler while stopping: got %v, want ErrStopping", err)
	}
	close(release)
	if err := <-stopped; err != nil {
		t.Fatalf("Run: %v", err)
	}

	if err := c.HandleRequest("next", consumer.Config{Subject: "next.x"}, liveEcho()); err != nil {
		t.Fatalf("Handle after Run: %v", err)
	}
	if err := c.RemoveHandler(context.Background(), "busy"); err != nil {
		t.Fatalf("RemoveHandler after Run: %v", err)
	}
	running(t, c)
	liveReady(t, c)
	if _, err := nc.Request("next.x", nil, 5*time.Second); err != nil {
		t.Fatalf("the handler declared between runs: %v", err)
	}
	if got := handlerNames(c); !slices.Equal(got, []string{"next"}) {
		t.Fatalf("handlers: got %v", got)
	}
}

// Handle and RemoveHandler racing the end of Run: no panic, nothing left
// running (TestMain's leak check), Run stops cleanly, and each call
// either takes effect or fails with ErrStopping (a name never declared is
// not removed).
func TestHandleAndRemoveRaceTheStop(t *testing.T) {
	t.Parallel()
	srv := natstest.RunServer(t)
	for round := range 3 {
		c := liveClient(t, srv, "name: live\n")
		stop := running(t, c)
		liveReady(t, c)
		var wg sync.WaitGroup
		errs := make(chan error, 100)
		for i := range 16 {
			wg.Go(func() {
				name := fmt.Sprintf("r%d", i)
				err := c.HandleRequest(name, consumer.Config{Subject: "race." + name}, liveEcho())
				errs <- err
				rmErr := c.RemoveHandler(context.Background(), name)
				if err != nil && errors.Is(rmErr, consumer.ErrNotDeclared) {
					return
				}
				errs <- rmErr
			})
		}
		if err := stop(); err != nil {
			t.Fatalf("round %d: Run: %v", round, err)
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			if err != nil && !errors.Is(err, corral.ErrStopping) {
				t.Fatalf("round %d: got %v, want nil or ErrStopping", round, err)
			}
		}
		for _, h := range c.Status().Handlers {
			if h.Child.State == supervisor.Running {
				t.Fatalf("round %d: %s running after Run", round, h.Name)
			}
		}
	}
}
