package consumer

import (
	"context"
	"testing"
	"time"

	"github.com/corral-go/corral/connection"
	"github.com/corral-go/corral/internal/natstest"
	"github.com/corral-go/corral/supervisor"
)

// A group without request handlers runs no micro responder; the first
// request handler, declared while the group serves, starts it.
func TestMicroResponderRunsOnlyForRequestHandlers(t *testing.T) {
	t.Parallel()
	srv := natstest.RunServer(t)
	g := NewGroup(connection.NewFixed(connectInternal(t, srv.URL())), supervisor.Events{})
	responding := func() bool {
		g.mu.Lock()
		defer g.mu.Unlock()
		return g.micro.cancel != nil
	}
	noop := HandlerFunc(func(context.Context, *Msg) error { return nil })
	if err := g.Handle("plain", Config{Subject: "plain"}, noop); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- g.Serve(ctx) }()
	defer func() {
		cancel()
		<-done
	}()
	natstest.Eventually(t, 10*time.Second, func() bool { return len(g.NotReady()) == 0 },
		func() string { return "plain never subscribed" })
	if responding() {
		t.Fatal("a micro responder runs for a group without request handlers")
	}
	echo := RequestFunc(func(_ context.Context, m *Msg) (Reply, error) { return Reply{Data: m.Data()}, nil })
	if err := g.HandleRequest("ours", Config{Subject: "ours"}, echo); err != nil {
		t.Fatal(err)
	}
	if !responding() {
		t.Fatal("no micro responder runs for a request handler")
	}
}
