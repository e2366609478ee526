package corral_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/corral-go/corral"
	"github.com/corral-go/corral/connection"
	"github.com/corral-go/corral/consumer"
	"github.com/corral-go/corral/internal/natstest"
	"github.com/corral-go/corral/kv"
	"github.com/corral-go/corral/objectstore"
	"github.com/corral-go/corral/supervisor"
	"github.com/corral-go/corral/tasks"
)

// Once Ready returns, everything declared is ready: a core message
// published at once reaches its handler (core NATS drops it for a
// subscription not yet made), and a change made at once reaches a watch of
// updates only (which starts after what its bucket holds when it starts).
func TestReadyWaitsForEverythingDeclared(t *testing.T) {
	t.Parallel()
	cfg := embeddedConfig(t)
	parsed, err := corral.ParseConfig([]byte(`
kv:
  settings: {history: 5}
object_stores:
  blobs: {}
tasks:
  render: {max_concurrency: 2, heartbeat: 300ms, lease_ttl: 1s, claim_wait: 1s, keep_completed: 1m}
`))
	if err != nil {
		t.Fatal(err)
	}
	cfg.KV, cfg.ObjectStores, cfg.Tasks = parsed.KV, parsed.ObjectStores, parsed.Tasks
	c, err := corral.New(cfg, embeddedServer)
	if err != nil {
		t.Fatal(err)
	}
	got := make(chan string, 1)
	if err := c.Handle("orders", consumer.Config{Subject: "orders.created"}, consumer.HandlerFunc(func(_ context.Context, m *consumer.Msg) error {
		got <- string(m.Data())
		return nil
	})); err != nil {
		t.Fatal(err)
	}
	if err := c.HandleTasks("render", tasks.Config{}, tasks.HandlerFunc(func(context.Context, *tasks.Task) error { return nil })); err != nil {
		t.Fatal(err)
	}
	raw, err := c.KV("settings")
	if err != nil {
		t.Fatal(err)
	}
	changes := make(chan string, 4)
	kw, err := raw.Watch("settings-watch", kv.WatchConfig{UpdatesOnly: true}, func(_ context.Context, e kv.Entry[[]byte]) error {
		if e.Op == kv.Put {
			changes <- e.Key
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	store, err := c.ObjectStore("blobs")
	if err != nil {
		t.Fatal(err)
	}
	objects := make(chan string, 4)
	ow, err := store.Watch("blobs-watch", objectstore.WatchConfig{UpdatesOnly: true}, func(_ context.Context, ch objectstore.Change) error {
		if !ch.Synced {
			objects <- ch.Info.Name
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range []interface {
		Serve(context.Context) error
		String() string
	}{kw, ow} {
		if err := c.AddWatch(w); err != nil {
			t.Fatal(err)
		}
	}

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	// Before Run nothing is ready: Ready waits, here until its ctx ends.
	early, cancelEarly := context.WithTimeout(ctx, 100*time.Millisecond)
	if err := c.Ready(early); !errors.Is(err, corral.ErrNotReady) || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Ready before Run: %v, want ErrNotReady at its ctx's end", err)
	}
	cancelEarly()
	// Called as Run starts, whichever goes first: it waits for Run too.
	ready := make(chan error, 1)
	go func() { ready <- c.Ready(ctx) }()
	running(t, c)
	if err := <-ready; err != nil {
		t.Fatalf("Ready: %v\n%s", err, c.Status())
	}

	st := c.Status()
	if st.Connection.State != connection.StateConnected || !st.Publisher.Ready || !st.Handlers[0].Ready {
		t.Fatalf("Ready returned before everything was ready:\n%s", st)
	}
	for _, ch := range append(st.Watches, st.Tasks[0].Child) {
		if ch.State != supervisor.Running {
			t.Fatalf("Ready returned with %s %s:\n%s", ch.Name, ch.State, st)
		}
	}
	nc, err := c.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := nc.Publish("orders.created", []byte("o-1")); err != nil {
		t.Fatal(err)
	}
	if _, err := raw.Put(ctx, "mode", []byte("fast")); err != nil {
		t.Fatal(err)
	}
	if _, err := store.PutBytes(ctx, "report.csv", []byte("a,b\n")); err != nil {
		t.Fatal(err)
	}
	for what, ch := range map[string]chan string{"orders handler": got, "kv watch": changes, "object watch": objects} {
		select {
		case <-ch:
		case <-ctx.Done():
			t.Fatalf("%s missed what was published right after Ready:\n%s", what, c.Status())
		}
	}
	// Ready again: at once, nothing changed.
	if err := c.Ready(ctx); err != nil {
		t.Fatal(err)
	}
}

// Ready reports a Run that failed, whether it is called as Run starts
// (before or after Run fails: the test cannot tell which) or after Run
// returned.
func TestReadyReportsAFailedRun(t *testing.T) {
	t.Parallel()
	cfg, err := corral.ParseConfig([]byte("handlers:\n  lonely: {subject: nobody.binds.me}\n"))
	if err != nil {
		t.Fatal(err)
	}
	cfg.Server.StoreDir = t.TempDir()
	c, err := corral.New(cfg, embeddedServer)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	ready := make(chan error, 1)
	go func() { ready <- c.Ready(ctx) }()
	runErr := c.Run(ctx)
	for _, when := range []string{"waiting", "after"} {
		var err error
		if when == "waiting" {
			err = <-ready
		} else {
			err = c.Ready(ctx)
		}
		if !errors.Is(err, corral.ErrNotReady) || !errors.Is(err, corral.ErrUnboundHandler) || !strings.Contains(err.Error(), runErr.Error()) {
			t.Errorf("Ready %s Run failed: got %v, want ErrNotReady with Run's %v", when, err, runErr)
		}
	}
}

// When ctx ends first, Ready names what is not ready yet.
func TestReadyNamesWhatIsNotReady(t *testing.T) {
	t.Parallel()
	c, err := corral.New(embeddedConfig(t), embeddedServer)
	if err != nil {
		t.Fatal(err)
	}
	done, cancel := context.WithCancel(context.Background())
	cancel()
	if err := c.Ready(done); !errors.Is(err, corral.ErrNotReady) || !errors.Is(err, context.Canceled) || !strings.Contains(err.Error(), "Run") {
		t.Fatalf("Ready before Run with an ended ctx: got %v, want ErrNotReady waiting for Run", err)
	}

	// A server that never answers: the connection is never up.
	cfg := corral.Config{Name: "unreachable"}
	cfg.Connection.Servers = []string{"nats://127.0.0.1:1"}
	c, err = corral.New(cfg, embeddedServer)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Handle("orders", consumer.Config{Subject: "orders.created"}, consumer.HandlerFunc(func(context.Context, *consumer.Msg) error { return nil })); err != nil {
		t.Fatal(err)
	}
	running(t, c)
	ctx, cancelWait := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancelWait()
	err = c.Ready(ctx)
	if !errors.Is(err, corral.ErrNotReady) || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Ready with no server: got %v, want ErrNotReady and DeadlineExceeded", err)
	}
	for _, want := range []string{"connection", "publisher", `handler "orders"`} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("Ready's error does not name %s: %v", want, err)
		}
	}
}

// Ready waits for each kind of child: a JetStream handler whose stream
// does not exist yet, a watch still delivering what its bucket held, a
// task worker that cannot start for want of its dead-letter stream. Once
// each is mended, Ready returns.
func TestReadyWaitsForEachChild(t *testing.T) {
	t.Parallel()
	cfg := embeddedConfig(t)
	parsed, err := corral.ParseConfig([]byte(`
restart: {restart_delay: 20ms, backoff: 200ms, failure_threshold: 1000}
kv:
  settings: {}
tasks:
  render: {heartbeat: 300ms, lease_ttl: 1s, claim_wait: 1s, dead_letter: dead.render}
`))
	if err != nil {
		t.Fatal(err)
	}
	cfg.Restart, cfg.KV, cfg.Tasks = parsed.Restart, parsed.KV, parsed.Tasks
	rec := natstest.NewRecorder()
	c, err := corral.New(cfg, embeddedServer, corral.WithEventHook(rec.Hook))
	if err != nil {
		t.Fatal(err)
	}
	nop := consumer.HandlerFunc(func(context.Context, *consumer.Msg) error { return nil })
	if err := c.Handle("later", consumer.Config{JetStream: consumer.JetStream{Stream: "LATER"}}, nop); err != nil {
		t.Fatal(err)
	}
	if err := c.HandleTasks("render", tasks.Config{}, tasks.HandlerFunc(func(context.Context, *tasks.Task) error { return nil })); err != nil {
		t.Fatal(err)
	}
	raw, err := c.KV("settings")
	if err != nil {
		t.Fatal(err)
	}
	release := make(chan struct{})
	w, err := raw.Watch("slow-watch", kv.WatchConfig{}, func(ctx context.Context, e kv.Entry[[]byte]) error {
		if e.Op == kv.Synced {
			select {
			case <-release:
			case <-ctx.Done():
				return ctx.Err()
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.AddWatch(w); err != nil {
		t.Fatal(err)
	}
	running(t, c)

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	short, cancelShort := context.WithTimeout(ctx, 500*time.Millisecond)
	defer cancelShort()
	err = c.Ready(short)
	if !errors.Is(err, corral.ErrNotReady) {
		t.Fatalf("Ready with three children unable to be ready: got %v, want ErrNotReady", err)
	}
	for _, want := range []string{`handler "later"`, `watch "slow-watch"`, `task queue "render"`} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("Ready's error does not name %s: %v", want, err)
		}
	}

	nc, err := c.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	for name, subject := range map[string]string{"LATER": "later.>", "DEAD": "dead.>"} {
		if _, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: name, Subjects: []string{subject}}); err != nil {
			t.Fatal(err)
		}
	}
	close(release)
	if err := c.Ready(ctx); err != nil {
		t.Fatalf("Ready once every child could be: %v\n%s", err, c.Status())
	}
	if h := c.Status().Handlers[0]; !h.Ready {
		t.Fatalf("Ready returned with the handler not ready: %+v", h)
	}
	leased := false
	for _, ev := range rec.Events() {
		if la, ok := ev.(tasks.LeaseAcquired); ok && la.Queue == "render" {
			leased = true
		}
	}
	if !leased {
		t.Fatalf("Ready returned before the worker took its lease:\n%s", c.Status())
	}
}
