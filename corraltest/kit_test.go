package corraltest_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/corral-go/corral"
	"github.com/corral-go/corral/consumer"
	"github.com/corral-go/corral/corraltest"
	"github.com/corral-go/corral/embedded"
	"github.com/corral-go/corral/internal/natstest"
	"github.com/corral-go/corral/supervisor"
)

// wantReport fails t unless one of reports contains every one of parts.
func wantReport(t *testing.T, reports []string, parts ...string) {
	t.Helper()
	for _, r := range reports {
		all := true
		for _, p := range parts {
			all = all && strings.Contains(r, p)
		}
		if all {
			return
		}
	}
	t.Errorf("no report contains %q; reports:\n%s", parts, strings.Join(reports, "\n---\n"))
}

func echo(ctx context.Context, m *consumer.Msg) (consumer.Reply, error) {
	return consumer.Reply{Data: m.Data()}, nil
}

// The Client runs from Start until the test's cleanup, which leaves it
// stopped: its Run has returned.
func TestCleanupStopsTheClient(t *testing.T) {
	var kit *corraltest.Kit
	reports, failed := runTest(func(ft testing.TB) {
		kit = corraltest.New(ft, corral.Config{})
		if err := kit.Client.HandleRequest("echo", consumer.Config{Subject: "echo"}, consumer.RequestFunc(echo)); err != nil {
			ft.Fatal(err)
		}
		kit.Start(ft.Context())
		if got := kit.Request(ft.Context(), "echo", []byte("hi")); string(got.Data) != "hi" {
			ft.Errorf("reply %q, want %q", got.Data, "hi")
		}
	})
	if failed {
		t.Fatalf("the test failed: %q", reports)
	}
	err := kit.Client.PublishCore(context.Background(), "echo", nil)
	if !errors.Is(err, corral.ErrNotRunning) {
		t.Fatalf("PublishCore after the test: %v, want ErrNotRunning", err)
	}
	if o := kit.Outcomes("echo"); len(o) != 1 || o[0].Err != nil || string(o[0].Data) != "hi" {
		t.Fatalf("outcomes: %v, want one of %q, ok", o, "hi")
	}
}

// A Client whose Run fails at once fails Start with Run's error, reported
// once: the cleanup does not report it again.
func TestStartFailsWithRunsError(t *testing.T) {
	reports, failed := runTest(func(ft testing.TB) {
		cfg := corral.Config{Handlers: map[string]consumer.Config{"orders": {Subject: "orders"}}}
		kit := corraltest.New(ft, cfg) // "orders" is never bound
		kit.Start(ft.Context())
		ft.Errorf("Start returned")
	})
	if !failed || len(reports) != 1 {
		t.Fatalf("failed %v, reports %q: want one report", failed, reports)
	}
	wantReport(t, reports, "corraltest: Start: the Client is not ready", corral.ErrUnboundHandler.Error(), `"orders"`)
}

// A Run that ends in error at the end of the test fails it: here a handler
// that does not stop within its shutdown timeout.
func TestCleanupFailsWhenShutdownIsIncomplete(t *testing.T) {
	release := make(chan struct{})
	busy := make(chan struct{})
	reports, failed := runTest(func(ft testing.TB) {
		kit := corraltest.New(ft, corral.Config{})
		hc := consumer.Config{Subject: "stuck", Restart: supervisor.Policy{ShutdownTimeout: 200 * time.Millisecond}}
		stuck := consumer.HandlerFunc(func(ctx context.Context, m *consumer.Msg) error {
			close(busy)
			<-release // deaf to ctx
			return nil
		})
		if err := kit.Client.Handle("stuck", hc, stuck); err != nil {
			ft.Fatal(err)
		}
		kit.Start(ft.Context())
		kit.PublishCore(ft.Context(), "stuck", nil)
		<-busy
	})
	close(release)
	if !failed {
		t.Fatalf("the test passed: %q", reports)
	}
	wantReport(t, reports, "corraltest: Stop: Run returned", corral.ErrShutdownIncomplete.Error(), "stuck")
}

// Stop, then Start again: the embedded server keeps its store, and the
// outcomes recorded before the stop are kept.
func TestStartAgainAfterStop(t *testing.T) {
	kit := corraltest.New(t, corral.Config{})
	hc := consumer.Config{Subject: "jobs.>", JetStream: jobs("JOBS")}
	if err := kit.Client.Handle("jobs", hc, consumer.HandlerFunc(ok)); err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	kit.Start(ctx)
	kit.Publish(ctx, "jobs.a", []byte("1"))
	kit.WaitOutcome(ctx, "jobs")
	kit.Stop(ctx)
	kit.Stop(ctx) // a no-op

	kit.Start(ctx)
	kit.Publish(ctx, "jobs.b", []byte("2"))
	if o := kit.WaitOutcome(ctx, "jobs"); string(o.Data) != "2" {
		t.Fatalf("after the restart: %v, want the second job", o)
	}
	if got := kit.StreamMsgs(ctx, "JOBS", ""); len(got) != 2 {
		t.Fatalf("JOBS holds %d messages, want both", len(got))
	}
	if got := kit.Outcomes(""); len(got) != 2 {
		t.Fatalf("outcomes %v, want both jobs'", got)
	}
}

// The helpers that talk to the server say so when the Client is not
// running, and Start refuses a second Start.
func TestHelpersNeedStart(t *testing.T) {
	for name, call := range map[string]func(*corraltest.Kit, context.Context){
		"Publish":     func(k *corraltest.Kit, ctx context.Context) { k.Publish(ctx, "a", nil) },
		"PublishCore": func(k *corraltest.Kit, ctx context.Context) { k.PublishCore(ctx, "a", nil) },
		"Request":     func(k *corraltest.Kit, ctx context.Context) { k.Request(ctx, "a", nil) },
		"StreamMsgs":  func(k *corraltest.Kit, ctx context.Context) { k.StreamMsgs(ctx, "A", "") },
		"Bucket":      func(k *corraltest.Kit, ctx context.Context) { k.Bucket(ctx, "a") },
		"DeadLetters": func(k *corraltest.Kit, ctx context.Context) { k.DeadLetters(ctx, "a") },
	} {
		t.Run(name, func(t *testing.T) {
			reports, failed := runTest(func(ft testing.TB) {
				call(corraltest.New(ft, corral.Config{}), ft.Context())
			})
			if !failed {
				t.Fatalf("%s before Start passed", name)
			}
			wantReport(t, reports, "the Client is not running: call Start first")
		})
	}
	reports, failed := runTest(func(ft testing.TB) {
		kit := corraltest.New(ft, corral.Config{})
		kit.Start(ft.Context())
		kit.Start(ft.Context())
	})
	if !failed {
		t.Fatal("a second Start passed")
	}
	wantReport(t, reports, "already running")
}

// With servers configured, the Kit's Client connects to them and runs no
// server of its own; TempConfig leaves such a configuration alone.
func TestKitOnAServerOfTheTest(t *testing.T) {
	srv := natstest.RunServer(t)
	var cfg corral.Config
	cfg.Connection.Servers = []string{srv.URL()}
	if got := corraltest.TempConfig(t, cfg); got.Server.StoreDir != "" {
		t.Fatalf("TempConfig set a store dir %q for a Client with servers", got.Server.StoreDir)
	}
	kit := corraltest.New(t, cfg)
	if err := kit.Client.HandleRequest("echo", consumer.Config{Subject: "echo"}, consumer.RequestFunc(echo)); err != nil {
		t.Fatal(err)
	}
	kit.Start(t.Context())
	if got := kit.Client.Status().Connection.URL; got != srv.URL() {
		t.Fatalf("connected to %q, want %q", got, srv.URL())
	}
	if reply := kit.Request(t.Context(), "echo", []byte("x")); string(reply.Data) != "x" {
		t.Fatalf("reply %q", reply.Data)
	}
}

// A Client the test built, with Wrap: the recorder joins its middleware.
func TestWrap(t *testing.T) {
	c, err := corral.New(corraltest.TempConfig(t, corral.Config{}), corral.WithEmbeddedServer(embedded.New))
	if err != nil {
		t.Fatal(err)
	}
	var order []string
	c.Use(func(next consumer.Handler) consumer.Handler {
		return consumer.HandlerFunc(func(ctx context.Context, m *consumer.Msg) error {
			order = append(order, "outer") // one worker: no race
			return next.Handle(ctx, m)
		})
	})
	if err := c.Handle("greet", consumer.Config{Subject: "greet"}, consumer.HandlerFunc(ok)); err != nil {
		t.Fatal(err)
	}
	kit := corraltest.Wrap(t, c)
	kit.Start(t.Context())
	kit.PublishCore(t.Context(), "greet", []byte("hi"))
	if o := kit.WaitOutcome(t.Context(), "greet"); o.Err != nil || o.Subject != "greet" {
		t.Fatalf("outcome %v", o)
	}
	if len(order) != 1 {
		t.Fatalf("the Client's own middleware ran %d times", len(order))
	}
}

// A Kit made and never started releases the Client at the end of the test.
func TestNeverStarted(t *testing.T) {
	reports, failed := runTest(func(ft testing.TB) { corraltest.New(ft, corral.Config{}) })
	if failed {
		t.Fatalf("failed: %q", reports)
	}
}

func ok(context.Context, *consumer.Msg) error { return nil }
