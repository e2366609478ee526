package corral_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/corral-go/corral"
	"github.com/corral-go/corral/connection"
	"github.com/corral-go/corral/consumer"
	"github.com/corral-go/corral/internal/natstest"
	"github.com/corral-go/corral/supervisor"
)

// stuckClient runs a Client on srv with a core handler "stuck" that
// ignores its ctx until release is closed; started receives once the
// handler holds a message. live declares the handler while Run runs.
func stuckClient(t *testing.T, srv *natstest.Server, live bool) (c *corral.Client, stop func() error, release chan struct{}) {
	t.Helper()
	cfg := corral.Config{Name: "stuck"}
	cfg.Connection.Servers = []string{srv.URL()}
	c, err := corral.New(cfg, embeddedServer)
	if err != nil {
		t.Fatal(err)
	}
	release, started := make(chan struct{}), make(chan struct{}, 1)
	t.Cleanup(func() {
		select {
		case <-release:
		default:
			close(release)
		}
	})
	hc := consumer.Config{Subject: "stuck.in"}
	hc.Restart.ShutdownTimeout = 100 * time.Millisecond
	h := consumer.HandlerFunc(func(context.Context, *consumer.Msg) error {
		select {
		case started <- struct{}{}:
		default:
		}
		<-release // ignores its ctx
		return nil
	})
	if !live {
		if err := c.Handle("stuck", hc, h); err != nil {
			t.Fatal(err)
		}
	}
	stop = running(t, c)
	if live {
		waitConn(t, c)
		if err := c.Handle("stuck", hc, h); err != nil {
			t.Fatal(err)
		}
	}
	liveReady(t, c)
	if err := c.PublishCore(context.Background(), "stuck.in", []byte("x")); err != nil {
		t.Fatal(err)
	}
	select {
	case <-started:
	case <-time.After(10 * time.Second):
		t.Fatal("the handler never got the message")
	}
	return c, stop, release
}

func TestRunReportsAHandlerThatIgnoredItsShutdownTimeout(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		live bool
	}{{"declared before Run", false}, {"declared while running", true}} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			srv := natstest.RunServer(t)
			c, stop, release := stuckClient(t, srv, tc.live)
			err := stop()
			close(release)
			if !errors.Is(err, corral.ErrShutdownIncomplete) {
				t.Fatalf("Run: got %v, want ErrShutdownIncomplete", err)
			}
			if u := c.Status().Unstopped; !slices.ContainsFunc(u, func(s string) bool { return strings.Contains(s, "stuck") }) {
				t.Fatalf("Status().Unstopped: got %v, want the stuck handler", u)
			}
		})
	}
}

func TestSecondRunLeavesTheFirstRunning(t *testing.T) {
	t.Parallel()
	srv := natstest.RunServer(t)
	cfg := corral.Config{Name: "twice"}
	cfg.Connection.Servers = []string{srv.URL()}
	c, err := corral.New(cfg, embeddedServer)
	if err != nil {
		t.Fatal(err)
	}
	stop := running(t, c)
	liveReady(t, c)
	if err := c.Run(context.Background()); !errors.Is(err, corral.ErrRunning) {
		t.Fatalf("second Run: got %v, want ErrRunning", err)
	}
	// The first Run still runs: what only a Client at rest takes is still
	// refused, and a handler declared now starts at once and takes
	// messages.
	if err := c.AddWatch(idleService{}); !errors.Is(err, corral.ErrRunning) {
		t.Fatalf("Watch after the second Run: got %v, want ErrRunning", err)
	}
	got := make(chan string, 1)
	err = c.Handle("late", consumer.Config{Subject: "late.in"}, consumer.HandlerFunc(func(_ context.Context, m *consumer.Msg) error {
		select {
		case got <- string(m.Data()):
		default:
		}
		return nil
	}))
	if err != nil {
		t.Fatalf("Handle after the second Run: %v", err)
	}
	liveReady(t, c)
	if err := c.PublishCore(context.Background(), "late.in", []byte("hi")); err != nil {
		t.Fatal(err)
	}
	select {
	case m := <-got:
		if m != "hi" {
			t.Fatalf("handler got %q, want hi", m)
		}
	case <-time.After(10 * time.Second):
		t.Fatalf("the handler declared after the second Run got nothing:\n%s", c.Status())
	}
	for _, ch := range c.Status().Children {
		if ch.State != supervisor.Running {
			t.Fatalf("%s %s after the second Run:\n%s", ch.Name, ch.State, c.Status())
		}
	}
	if err := stop(); err != nil {
		t.Fatalf("first Run: got %v, want nil", err)
	}
}

// idleService is a watch that does nothing until its ctx ends.
type idleService struct{}

func (idleService) Serve(ctx context.Context) error { <-ctx.Done(); return ctx.Err() }
func (idleService) String() string                  { return "idle" }

func TestPublishMsgNilFails(t *testing.T) {
	t.Parallel()
	c, err := corral.New(embeddedConfig(t), embeddedServer)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	if _, err := c.PublishMsg(context.Background(), nil); err == nil {
		t.Fatal("Client.PublishMsg(nil): got nil error")
	}
	if _, err := c.Publisher().PublishMsg(context.Background(), nil); err == nil {
		t.Fatal("Buffered.PublishMsg(nil): got nil error")
	}
}

func TestStoppedClientFailsCoreCallsAtOnce(t *testing.T) {
	t.Parallel()
	srv := natstest.RunServer(t)
	cfg := corral.Config{Name: "stopped"}
	cfg.Connection.Servers = []string{srv.URL()}
	c, err := corral.New(cfg, embeddedServer)
	if err != nil {
		t.Fatal(err)
	}
	stop := running(t, c)
	waitConn(t, c)
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := c.PublishCore(ctx, "after.stop", nil); !errors.Is(err, corral.ErrNotRunning) {
		t.Fatalf("PublishCore after Run returned: got %v, want ErrNotRunning", err)
	}
	if err := c.PublishCoreMsg(ctx, &nats.Msg{Subject: "after.stop"}); !errors.Is(err, corral.ErrNotRunning) {
		t.Fatalf("PublishCoreMsg after Run returned: got %v, want ErrNotRunning", err)
	}
	if ctx.Err() != nil {
		t.Fatal("the calls waited for ctx")
	}
}

// A PublishCore waiting for the connection when Run returns fails then.
func TestPublishCoreWaitingWhenRunReturnsFails(t *testing.T) {
	t.Parallel()
	srv := natstest.RunServer(t)
	cfg := corral.Config{Name: "waiting"}
	cfg.Connection.Servers = []string{srv.URL()}
	srv.Shutdown() // never connected: PublishCore waits
	c, err := corral.New(cfg, embeddedServer)
	if err != nil {
		t.Fatal(err)
	}
	stop := running(t, c)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- c.PublishCore(ctx, "waiting.in", nil) }()
	natstest.Eventually(t, 10*time.Second, func() bool { return c.Status().Connection.State != connection.StateStopped },
		func() string { return "Run never began" })
	_ = stop()
	select {
	case err := <-done:
		if !errors.Is(err, corral.ErrNotRunning) {
			t.Fatalf("PublishCore waiting when Run returned: got %v, want ErrNotRunning", err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("PublishCore still waits after Run returned")
	}
}

// stuckWatch ignores its ctx until release is closed.
type stuckWatch struct{ started, release chan struct{} }

func (w stuckWatch) Serve(context.Context) error {
	close(w.started)
	<-w.release
	return nil
}
func (stuckWatch) String() string { return "stuck-watch" }

// The watchers group, too, stops in time while its child does not.
func TestRunReportsAWatchThatIgnoredItsShutdownTimeout(t *testing.T) {
	t.Parallel()
	srv := natstest.RunServer(t)
	cfg := corral.Config{Name: "stuck-watch"}
	cfg.Connection.Servers = []string{srv.URL()}
	cfg.Watches.Restart.ShutdownTimeout = 100 * time.Millisecond
	c, err := corral.New(cfg, embeddedServer)
	if err != nil {
		t.Fatal(err)
	}
	w := stuckWatch{started: make(chan struct{}), release: make(chan struct{})}
	if err := c.AddWatch(w); err != nil {
		t.Fatal(err)
	}
	stop := running(t, c)
	select {
	case <-w.started:
	case <-time.After(10 * time.Second):
		t.Fatal("the watch never started")
	}
	err = stop()
	close(w.release)
	if !errors.Is(err, corral.ErrShutdownIncomplete) {
		t.Fatalf("Run: got %v, want ErrShutdownIncomplete", err)
	}
	if u := c.Status().Unstopped; !slices.ContainsFunc(u, func(s string) bool { return strings.Contains(s, "stuck-watch") }) {
		t.Fatalf("Status().Unstopped: got %v, want the stuck watch", u)
	}
}
