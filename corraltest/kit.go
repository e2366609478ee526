package corraltest

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/corral-go/corral"
	"github.com/corral-go/corral/embedded"
	"github.com/corral-go/corral/internal/leakcheck"
	"github.com/corral-go/corral/internal/natstest"
)

// DefaultTimeout bounds every call of a Kit that waits, when its ctx has
// no deadline: Start waiting for Ready, a publish waiting for its ack, a
// wait for outcomes, messages or dead letters. Stop waits the Client's
// own ShutdownTimeout plus this.
const DefaultTimeout = 10 * time.Second

// Kit runs one corral.Client for one test. It records the outcome of
// every message the Client's handlers take (see [Kit.WaitOutcome]) and
// reads what the server stores; every helper fails the test, saying what
// it expected and what it saw, rather than return an error. Its methods
// that can fail the test must be called from the test's goroutine, as
// t.Fatal must; the others are safe for concurrent use.
//
// The test declares handlers, watches and task workers on Client, then
// calls [Kit.Start]. The Client stops when the test ends: a t.Cleanup of
// New or Wrap stops it, waits for Run to return, and fails the test when
// Run returned an error, so nothing the Client started outlives the test.
type Kit struct {
	// Client is the Client under test: declare what it runs on it before
	// Start, and call it directly for what the Kit has no helper for.
	Client *corral.Client

	t   testing.TB
	rec *recorder

	mu      sync.Mutex
	running *run // nil before Start and after Stop
	ran     bool // Start was called at least once
}

// run is one Run of the Client, from Start to Stop.
type run struct {
	cancel context.CancelFunc
	done   chan struct{} // closed when Run has returned
	err    error         // what Run returned, set before done closes
}

// New builds a Client of cfg and opts for the test t, as corral.New does,
// with cfg set up for a test by [TempConfig]: with no servers configured
// it runs the embedded nats-server (corral.WithEmbeddedServer(embedded.New)
// comes before opts), by default on 127.0.0.1 and a random port, storing
// under t.TempDir(). It fails the test when corral.New fails. The Kit's
// recorder is the Client's first middleware (corral.Client.Use), so
// middleware a test adds later, and each handler's own, run inside it.
func New(t testing.TB, cfg corral.Config, opts ...corral.Option) *Kit {
	t.Helper()
	opts = append([]corral.Option{corral.WithEmbeddedServer(embedded.New)}, opts...)
	c, err := corral.New(TempConfig(t, cfg), opts...)
	if err != nil {
		t.Fatalf("corraltest: corral.New: %v", err)
	}
	return Wrap(t, c)
}

// Wrap is New for a Client the test has built itself and not run, such
// as one an application's own constructor returns with its handlers
// declared. Give that constructor a configuration from [TempConfig], so
// that its embedded server stores under t.TempDir(). The Kit's recorder
// is added to c with Use, inside the middleware c already has.
func Wrap(t testing.TB, c *corral.Client) *Kit {
	t.Helper()
	if c == nil {
		t.Fatalf("corraltest: Wrap: nil Client")
	}
	k := &Kit{Client: c, t: t, rec: newRecorder()}
	c.Use(k.rec.middleware)
	t.Cleanup(k.cleanup)
	return k
}

// TempConfig returns cfg set up for the test t: when it configures no
// servers (so the Client runs the embedded server) and no store
// directory, the embedded server stores under t.TempDir(), removed when
// the test ends. The server's host and port keep their defaults,
// 127.0.0.1 and a random free port.
func TempConfig(t testing.TB, cfg corral.Config) corral.Config {
	t.Helper()
	if len(cfg.Connection.Servers) == 0 && cfg.Server.StoreDir == "" {
		cfg.Server.StoreDir = t.TempDir()
	}
	return cfg
}

// VerifyTestMain checks for leaked goroutines in a package that uses the
// Kit and has no leak check of its own. Called from TestMain, it runs the
// tests (m.Run) and exits with their code. When they passed, it then
// fails the package (exit code 1), printing each goroutine's state and
// stack to stderr, if any goroutine is still running after 3s, other than
// the testing package's, the runtime's, os/signal's and those
// [ServerTopFunctions] names:
//
//	func TestMain(m *testing.M) { corraltest.VerifyTestMain(m) }
//
// Like every goroutine leak check, it cannot tell one test's goroutines
// from another's, so it runs once all of them have ended.
func VerifyTestMain(m *testing.M) { leakcheck.VerifyTestMain(m, natstest.IgnoreServerLeaks()...) }

// ServerTopFunctions returns the functions on top of the stacks of the
// goroutines nats-server now and then leaves running after it has shut
// down (two of a stream's file store), fully qualified, for a package
// that checks for leaks with goleak. Those are the server's; any other
// leak still fails the package:
//
//	func TestMain(m *testing.M) {
//		var opts []goleak.Option
//		for _, f := range corraltest.ServerTopFunctions() {
//			opts = append(opts, goleak.IgnoreTopFunction(f))
//		}
//		goleak.VerifyTestMain(m, opts...)
//	}
//
// The slice is new on each call.
func ServerTopFunctions() []string { return natstest.IgnoreServerLeaks() }

// Start runs the Client in the background and waits until it is ready
// (corral.Client.Ready): connected, its streams declared, every handler
// subscribed, every watch synced, every task worker leased. It fails the
// test with Ready's error, which names what was not ready or wraps what
// Run returned, when ctx ends first (DefaultTimeout when ctx has no
// deadline) or Run returns. Start after Stop runs the Client again, on
// the same store; Start while it runs fails the test.
func (k *Kit) Start(ctx context.Context) {
	k.t.Helper()
	k.mu.Lock()
	if k.running != nil {
		k.mu.Unlock()
		k.t.Fatalf("corraltest: Start: the Client is already running")
	}
	runCtx, cancel := context.WithCancel(context.Background())
	r := &run{cancel: cancel, done: make(chan struct{})}
	k.running, k.ran = r, true
	k.mu.Unlock()
	go func() {
		defer close(r.done)
		r.err = k.Client.Run(runCtx)
	}()

	ctx, stop := bounded(ctx, DefaultTimeout)
	defer stop()
	if err := k.Client.Ready(ctx); err != nil {
		status := k.Client.Status().String()
		// Stopped here, so that the failure is reported once, and not
		// again by the cleanup; Ready's error wraps what Run returned,
		// if it returned first.
		if runErr, stopErr := k.stop(context.Background()); stopErr != nil && (runErr == nil || !errors.Is(err, runErr)) {
			k.t.Fatalf("corraltest: Start: the Client is not ready: %v\n%s\n%v", err, status, stopErr)
		}
		k.t.Fatalf("corraltest: Start: the Client is not ready: %v\n%s", err, status)
	}
}

// Stop stops the Client and waits until Run has returned: its handlers
// drained, its publisher flushed, its connection drained and its embedded
// server stopped. It fails the test when Run returned an error (a
// shutdown that left a child running returns one wrapping
// corral.ErrShutdownIncomplete), or when Run has not returned once ctx
// ends (the Client's ShutdownTimeout plus DefaultTimeout when ctx has no
// deadline). Stop of a Client not running does nothing. The test's
// cleanup calls it, so a test calls it only to look at what a stopped
// Client left, or to Start it again.
func (k *Kit) Stop(ctx context.Context) {
	k.t.Helper()
	if _, err := k.stop(ctx); err != nil {
		k.t.Fatalf("%v", err)
	}
}

// stop is Stop, returning what Run returned and the failure to report.
func (k *Kit) stop(ctx context.Context) (runErr, failure error) {
	k.mu.Lock()
	r := k.running
	k.running = nil
	k.mu.Unlock()
	if r == nil {
		return nil, nil
	}
	ctx, cancel := bounded(ctx, k.Client.ShutdownTimeout()+DefaultTimeout)
	defer cancel()
	r.cancel()
	select {
	case <-r.done:
	case <-ctx.Done():
		return nil, fmt.Errorf("corraltest: Stop: Run did not return in time: %w\n%s", ctx.Err(), k.Client.Status())
	}
	if r.err != nil {
		return r.err, fmt.Errorf("corraltest: Stop: Run returned: %w\n%s", r.err, k.Client.Status())
	}
	return nil, nil
}

// cleanup stops the Client at the end of the test, or releases what New
// took if it never ran. It reports with Errorf, which a cleanup may call.
func (k *Kit) cleanup() {
	k.t.Helper()
	if _, err := k.stop(context.Background()); err != nil {
		k.t.Errorf("%v", err)
	}
	k.mu.Lock()
	ran := k.ran
	k.mu.Unlock()
	if !ran {
		if err := k.Client.Close(); err != nil {
			k.t.Errorf("corraltest: closing a Client never started: %v", err)
		}
	}
}

// started fails the test unless the Client runs: the helpers that talk
// to the server need Start first.
func (k *Kit) started(op string) {
	k.t.Helper()
	k.mu.Lock()
	r := k.running
	k.mu.Unlock()
	if r == nil {
		k.t.Fatalf("corraltest: %s: the Client is not running: call Start first", op)
	}
}

// bounded is ctx, given timeout when it has no deadline of its own.
func bounded(ctx context.Context, timeout time.Duration) (context.Context, context.CancelFunc) {
	if _, ok := ctx.Deadline(); ok {
		return context.WithCancel(ctx)
	}
	return context.WithTimeout(ctx, timeout)
}
