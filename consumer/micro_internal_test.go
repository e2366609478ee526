package consumer

import (
	"context"
	"testing"
	"time"

	"github.com/corral-go/corral/internal/natstest"
)

// A group without request handlers runs no micro responder; the first
// request handler, declared while the group serves, starts it.
func TestMicroResponderRunsOnlyForRequestHandlers(t *testing.T) {
	t.Parallel()
	g, serve := newServedGroup(t)
	responding := func() bool {
		g.mu.Lock()
		defer g.mu.Unlock()
		return g.micro.cancel != nil
	}
	noop := HandlerFunc(func(context.Context, *Msg) error { return nil })
	if err := g.Handle("plain", Config{Subject: "plain"}, noop); err != nil {
		t.Fatal(err)
	}
	serve()
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
