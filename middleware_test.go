package corral_test

import (
	"context"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/corral-go/corral"
	"github.com/corral-go/corral/consumer"
	"github.com/corral-go/corral/internal/natstest"
	"github.com/corral-go/corral/kv"
	"github.com/corral-go/corral/middleware"
)

type paid struct {
	Order string `json:"order"`
}

// Client.Use wraps every handler, typed ones and request handlers
// included, declared before it or after, outside each handler's own
// middleware; a handler's Dedup keeps its records in a bucket of the
// Client.
func TestClientUse(t *testing.T) {
	t.Parallel()
	cfg := embeddedConfig(t)
	cfg.KV = map[string]kv.Config{"charged": {TTL: time.Hour}}
	c, err := corral.New(cfg, embeddedServer)
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var steps []string
	mark := func(name string) consumer.Middleware {
		return func(next consumer.Handler) consumer.Handler {
			return consumer.HandlerFunc(func(ctx context.Context, m *consumer.Msg) error {
				mu.Lock()
				steps = append(steps, name+" "+m.Subject())
				mu.Unlock()
				return next.Handle(ctx, m)
			})
		}
	}
	c.Use(mark("client"))
	charged, err := c.KV("charged")
	if err != nil {
		t.Fatal(err)
	}
	handled := make(chan string, 2)
	orders := consumer.Config{Subject: "orders.paid", Middleware: []consumer.Middleware{mark("own"), middleware.Dedup(charged, middleware.DedupConfig{})}}
	if err := c.Handle("charge", orders, consumer.Typed(func(ctx context.Context, p paid, m *consumer.Msg) error {
		handled <- p.Order
		return nil
	})); err != nil {
		t.Fatal(err)
	}
	if err := c.HandleRequest("status", consumer.Config{Subject: "svc.status"},
		consumer.TypedRequest(func(ctx context.Context, p paid, m *consumer.Msg) (string, error) {
			return "charged " + p.Order, nil
		})); err != nil {
		t.Fatal(err)
	}
	c.Use(mark("later"))
	running(t, c)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := c.Ready(ctx); err != nil {
		t.Fatal(err)
	}
	nc, err := c.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for range 2 {
		m := nats.NewMsg("orders.paid")
		m.Data = []byte(`{"order":"o-1"}`)
		m.Header.Set(nats.MsgIdHdr, "o-1")
		if err := nc.PublishMsg(m); err != nil {
			t.Fatal(err)
		}
	}
	reply, err := nc.RequestWithContext(ctx, "svc.status", []byte(`{"order":"o-1"}`))
	if err != nil {
		t.Fatal(err)
	}
	if string(reply.Data) != `"charged o-1"` {
		t.Fatalf("reply: got %q", reply.Data)
	}
	if got := <-handled; got != "o-1" {
		t.Fatalf("handled %q", got)
	}
	natstest.Eventually(t, 20*time.Second, func() bool {
		for _, h := range c.Status().Handlers {
			if h.Name == "charge" {
				return h.Counters.Processed == 2
			}
		}
		return false
	}, func() string { return "both orders processed" })
	if len(handled) != 0 {
		t.Fatalf("the duplicate was handled: %q", <-handled)
	}
	mu.Lock()
	defer mu.Unlock()
	var order []string
	for _, s := range steps {
		if name, ok := strings.CutSuffix(s, " orders.paid"); ok {
			order = append(order, name)
		}
	}
	want := []string{"client", "later", "own", "client", "later", "own"}
	if !slices.Equal(order, want) || !slices.Contains(steps, "client svc.status") || !slices.Contains(steps, "later svc.status") {
		t.Fatalf("steps %q: want the orders through %q and the request through the Client's", steps, want)
	}
}
