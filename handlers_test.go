package corral_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/corral-go/corral"
	"github.com/corral-go/corral/consumer"
	"github.com/corral-go/corral/internal/natstest"
)

func TestHandlersBoundByName(t *testing.T) {
	t.Parallel()
	srv := natstest.RunServer(t)
	cfg, err := corral.ParseConfig([]byte(`
handlers:
  orders: {subject: orders.created, queue_group: billing, workers: 4, queue_size: 64}
  prices: {subject: svc.prices, overflow: reject}
  tuned:  {workers: 3}
`))
	if err != nil {
		t.Fatal(err)
	}
	cfg.Connection.Servers = []string{srv.URL()}
	c, err := corral.New(cfg, embeddedServer)
	if err != nil {
		t.Fatal(err)
	}
	got := make(chan string, 1)
	if err := c.Handle("orders", consumer.Config{}, consumer.HandlerFunc(func(ctx context.Context, m *consumer.Msg) error {
		got <- string(m.Data())
		return nil
	})); err != nil {
		t.Fatal(err)
	}
	if err := c.HandleRequest("prices", consumer.Config{}, consumer.RequestFunc(func(ctx context.Context, m *consumer.Msg) (consumer.Reply, error) {
		if string(m.Data()) == "bad" {
			return consumer.Reply{}, consumer.Errorf(400, "no such product")
		}
		return consumer.Reply{Data: []byte("42")}, nil
	})); err != nil {
		t.Fatal(err)
	}
	// Declared in code; the file retunes its workers only.
	if err := c.Handle("tuned",
		consumer.Config{Subject: "tuned.in", Workers: 1, QueueSize: 8}, consumer.HandlerFunc(func(context.Context, *consumer.Msg) error { return nil })); err != nil {
		t.Fatal(err)
	}
	running(t, c)
	waitConn(t, c)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	nc, _ := c.Conn(ctx)

	if err := c.Ready(ctx); err != nil {
		t.Fatal(err)
	}
	reply, err := nc.Request("svc.prices", nil, 5*time.Second)
	if err != nil || string(reply.Data) != "42" {
		t.Fatalf("request: %v %v", reply, err)
	}
	if err := nc.Publish("orders.created", []byte("o-1")); err != nil {
		t.Fatal(err)
	}
	select {
	case d := <-got:
		if d != "o-1" {
			t.Fatalf("got %q", d)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("orders handler received nothing")
	}
	byName := map[string]consumer.Status{}
	for _, h := range c.Status().Handlers {
		byName[h.Name] = h
	}
	if o := byName["orders"]; o.Workers != 4 || o.QueueSize != 64 || o.QueueGroup != "billing" {
		t.Fatalf("orders: got %+v", o)
	}
	if tu := byName["tuned"]; tu.Workers != 3 || tu.QueueSize != 8 || tu.Subject != "tuned.in" {
		t.Fatalf("tuned: got %+v, want workers from the file and the rest from code", tu)
	}
	if !strings.Contains(c.Status().String(), "orders") {
		t.Fatalf("status drawing lacks handlers:\n%s", c.Status())
	}
	// A request the handler refused as bad is drawn apart from failures.
	if _, err := nc.Request("svc.prices", []byte("bad"), 5*time.Second); err != nil {
		t.Fatal(err)
	}
	natstest.Eventually(t, 10*time.Second, func() bool {
		return strings.Contains(c.Status().String(), "failed=0 client_errors=1")
	}, func() string { return "the bad request is not drawn as a client error:\n" + c.Status().String() })
}

func TestHandlerDeclarationErrors(t *testing.T) {
	cfg, err := corral.ParseConfig([]byte(`
handlers:
  known: {subject: known.subject}
  lonely: {subject: nobody.binds.me}
`))
	if err != nil {
		t.Fatal(err)
	}
	cfg.Server.StoreDir = t.TempDir()
	c, err := corral.New(cfg, embeddedServer)
	if err != nil {
		t.Fatal(err)
	}
	nop := consumer.HandlerFunc(func(context.Context, *consumer.Msg) error { return nil })
	if err := c.Handle("missing", consumer.Config{}, nop); !errors.Is(err, corral.ErrUnknownHandler) || !strings.Contains(err.Error(), `"missing"`) {
		t.Fatalf("name missing from config: got %v", err)
	}
	if err := c.Handle("bad", consumer.Config{Subject: "a..b"}, nop); !errors.Is(err, corral.ErrInvalidConfig) || !strings.Contains(err.Error(), "subject") {
		t.Fatalf("invalid subject: got %v", err)
	}
	if err := c.Handle("known", consumer.Config{}, nop); err != nil {
		t.Fatal(err)
	}
	if err := c.Handle("known", consumer.Config{}, nop); !errors.Is(err, consumer.ErrDuplicateHandler) {
		t.Fatalf("duplicate: got %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	err = c.Run(ctx)
	if !errors.Is(err, corral.ErrUnboundHandler) || !strings.Contains(err.Error(), "lonely") {
		t.Fatalf("Run with an unbound configured handler: got %v", err)
	}
}

func TestInvalidHandlerConfigFailsAtNew(t *testing.T) {
	cfg, err := corral.ParseConfig([]byte(`
handlers:
  orders: {subject: "orders.>.x", workers: -2}
`))
	if err != nil {
		t.Fatal(err)
	}
	_, err = corral.New(cfg, embeddedServer)
	if !errors.Is(err, corral.ErrInvalidConfig) || !strings.Contains(err.Error(), "handlers.orders.subject") ||
		!strings.Contains(err.Error(), "handlers.orders.workers") {
		t.Fatalf("got %v, want both handler fields named", err)
	}
}

func TestHandlerEnvironmentOverride(t *testing.T) {
	t.Setenv("CORRAL_HANDLERS_ORDERS_WORKERS", "12")
	path := t.TempDir() + "/c.yaml"
	if err := writeFile(path, "handlers:\n  orders: {subject: orders.created, workers: 2}\n"); err != nil {
		t.Fatal(err)
	}
	cfg, err := corral.LoadConfig(path)
	if err != nil {
		t.Fatal(err)
	}
	if w := cfg.Handlers["orders"].Workers; w != 12 {
		t.Fatalf("workers: got %d, want the environment's 12", w)
	}
}

// A key the file writes overrides code even when it turns a setting off,
// as an empty queue group does.
func TestFileKeysOverrideCodeEvenWhenEmpty(t *testing.T) {
	cfg, err := corral.ParseConfig([]byte(`
handlers:
  audit: {queue_group: "", workers: 2}
`))
	if err != nil {
		t.Fatal(err)
	}
	c, err := corral.New(cfg, embeddedServer)
	if err != nil {
		t.Fatal(err)
	}
	nop := consumer.HandlerFunc(func(context.Context, *consumer.Msg) error { return nil })
	if err := c.Handle("audit", consumer.Config{Subject: "audit.>", QueueGroup: "auditors", Workers: 8}, nop); err != nil {
		t.Fatal(err)
	}
	h := c.Status().Handlers[0]
	if h.QueueGroup != "" || h.Workers != 2 || h.Subject != "audit.>" {
		t.Fatalf("got queue group %q, %d workers, subject %q; want no queue group, 2 workers, audit.>", h.QueueGroup, h.Workers, h.Subject)
	}
}

// log_failures reads from the file and the environment, and a handler
// declared in code without it reports its failures.
func TestLogFailuresFromFileAndEnvironment(t *testing.T) {
	cfg, err := corral.ParseConfig([]byte("handlers:\n  orders: {subject: orders.created, log_failures: false}\n  prices: {subject: prices}\n"))
	if err != nil {
		t.Fatal(err)
	}
	if lf := cfg.Handlers["orders"].LogFailures; lf == nil || *lf {
		t.Fatalf("orders: log_failures %v, want false", lf)
	}
	if lf := cfg.Handlers["prices"].LogFailures; lf != nil {
		t.Fatalf("prices: log_failures %v, want unset (true)", *lf)
	}
	if err := cfg.ApplyEnv([]string{"CORRAL_HANDLERS_ORDERS_LOG_FAILURES=true"}); err != nil {
		t.Fatal(err)
	}
	if lf := cfg.Handlers["orders"].LogFailures; lf == nil || !*lf {
		t.Fatalf("orders after the environment: log_failures %v, want true", lf)
	}
}
