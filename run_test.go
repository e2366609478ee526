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
	"github.com/corral-go/corral/kv"
	"github.com/corral-go/corral/objectstore"
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

// call is a call on a Client that needs its connection.
type call struct {
	name string
	do   func(ctx context.Context) error
}

// callsNeedingTheConnection are the calls of c that wait for its
// connection, on the bucket, store and lock newConnClient declares.
func callsNeedingTheConnection(t *testing.T, c *corral.Client) []call {
	t.Helper()
	bucket, err := c.KV("settings")
	if err != nil {
		t.Fatal(err)
	}
	store, err := c.ObjectStore("files")
	if err != nil {
		t.Fatal(err)
	}
	lock, err := c.Lock("leader")
	if err != nil {
		t.Fatal(err)
	}
	return []call{
		{"Conn", func(ctx context.Context) error { _, err := c.Conn(ctx); return err }},
		{"Request", func(ctx context.Context) error { _, err := c.Request(ctx, "svc.a", nil); return err }},
		{"RequestMsg", func(ctx context.Context) error { _, err := c.RequestMsg(ctx, &nats.Msg{Subject: "svc.a"}); return err }},
		{"RequestJSON", func(ctx context.Context) error { _, err := corral.RequestJSON[int](ctx, c, "svc.a", 1); return err }},
		{"PublishCore", func(ctx context.Context) error { return c.PublishCore(ctx, "after.stop", nil) }},
		{"PublishCoreMsg", func(ctx context.Context) error { return c.PublishCoreMsg(ctx, &nats.Msg{Subject: "after.stop"}) }},
		{"KV Get", func(ctx context.Context) error { _, err := bucket.Get(ctx, "k"); return err }},
		{"ObjectStore GetBytes", func(ctx context.Context) error { _, err := store.GetBytes(ctx, "f"); return err }},
		{"Lock TryAcquire", func(ctx context.Context) error { _, _, err := lock.TryAcquire(ctx); return err }},
	}
}

// newConnClient is a Client of srv with a bucket, a store and a lock.
func newConnClient(t *testing.T, srv *natstest.Server, name string, waitForConnection bool) *corral.Client {
	t.Helper()
	cfg := corral.Config{Name: name}
	cfg.Connection.Servers = []string{srv.URL()}
	cfg.KV = map[string]kv.Config{"settings": {}}
	cfg.ObjectStores = map[string]objectstore.Config{"files": {}}
	cfg.Locks = map[string]kv.LockConfig{"leader": {Bucket: "locks"}}
	cfg.Requests.WaitForConnection = &waitForConnection
	c, err := corral.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// Once Run has returned, every call that needs the connection fails at
// once with ErrNotRunning, whether or not requests wait for the
// connection.
func TestStoppedClientFailsEveryCallAtOnce(t *testing.T) {
	t.Parallel()
	srv := natstest.RunServer(t)
	for _, wait := range []bool{true, false} {
		c := newConnClient(t, srv, "stopped", wait)
		calls := callsNeedingTheConnection(t, c)
		stop := running(t, c)
		waitConn(t, c)
		if err := stop(); err != nil {
			t.Fatal(err)
		}
		for _, call := range calls {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			if err := call.do(ctx); !errors.Is(err, corral.ErrNotRunning) || ctx.Err() != nil {
				t.Errorf("%s after Run returned (wait_for_connection %v): got %v, want ErrNotRunning at once", call.name, wait, err)
			}
			cancel()
		}
	}
}

// A call waiting for the connection when Run returns fails then, with
// ErrNotRunning.
func TestCallsWaitingWhenRunReturnsFail(t *testing.T) {
	t.Parallel()
	srv := natstest.RunServer(t)
	c := newConnClient(t, srv, "waiting", true)
	calls := callsNeedingTheConnection(t, c)
	srv.Shutdown() // never connected: every call waits
	stop := running(t, c)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	natstest.Eventually(t, 10*time.Second, func() bool { return c.Status().Connection.State != connection.StateStopped },
		func() string { return "Run never began" })
	errs := make([]chan error, len(calls))
	for i, call := range calls {
		errs[i] = make(chan error, 1)
		go func() { errs[i] <- call.do(ctx) }()
	}
	_ = stop()
	for i, call := range calls {
		if err := <-errs[i]; !errors.Is(err, corral.ErrNotRunning) || ctx.Err() != nil {
			t.Errorf("%s waiting when Run returned: got %v, want ErrNotRunning then", call.name, err)
		}
	}
}

// Before the first Run, a call waits for the connection within its ctx,
// and gets it once Run has connected.
func TestCallsBeforeTheFirstRunWait(t *testing.T) {
	t.Parallel()
	srv := natstest.RunServer(t)
	c := newConnClient(t, srv, "before", true)
	short, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if _, err := c.Conn(short); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Conn before Run: got %v, want ctx's error", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	done := make(chan error, 1)
	go func() { _, err := c.Conn(ctx); done <- err }()
	running(t, c)
	if err := <-done; err != nil {
		t.Fatalf("Conn called before Run: got %v, want the connection once Run connected", err)
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
