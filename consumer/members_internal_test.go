package consumer

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/corral-go/corral/internal/natstest"
)

// Handlers added and removed while a group serves leave nothing behind:
// a long run that keeps doing so does not keep every old handler's tree.
func TestRemovedHandlersAreReleased(t *testing.T) {
	t.Parallel()
	g, serve := newServedGroup(t)
	if err := g.Handle("anchor", Config{Subject: "anchor"}, HandlerFunc(func(context.Context, *Msg) error { return nil })); err != nil {
		t.Fatal(err)
	}
	serve()
	members := func() int {
		g.mu.Lock()
		defer g.mu.Unlock()
		if g.run == nil {
			return -1
		}
		return len(g.run.members)
	}
	natstest.Eventually(t, 10*time.Second, func() bool { return members() > 0 }, func() string { return "the group never served" })
	baseline := -1
	for i := range 20 {
		name := fmt.Sprintf("h%d", i)
		if err := g.Handle(name, Config{Subject: "live." + name}, HandlerFunc(func(context.Context, *Msg) error { return nil })); err != nil {
			t.Fatal(err)
		}
		rctx, rcancel := context.WithTimeout(context.Background(), 10*time.Second)
		err := g.Remove(rctx, name)
		rcancel()
		if err != nil {
			t.Fatal(err)
		}
		if i == 0 {
			// The anchor and the group's own (its micro responder): what
			// must stay.
			baseline = members()
		}
	}
	natstest.Eventually(t, 10*time.Second, func() bool {
		g.mu.Lock()
		defer g.mu.Unlock()
		return g.run != nil && len(g.run.members) == baseline
	}, func() string {
		g.mu.Lock()
		defer g.mu.Unlock()
		var names []string
		for _, m := range g.run.members {
			names = append(names, fmt.Sprint(m.tree))
		}
		return fmt.Sprintf("members %v kept after 20 handlers came and went, want %d", names, baseline)
	})
}
