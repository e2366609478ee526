package consumer

import (
	"context"
	"errors"
	"testing"

	"github.com/nats-io/nats.go"

	"github.com/corral-go/corral/connection"
	"github.com/corral-go/corral/internal/natstest"
	"github.com/corral-go/corral/supervisor"
)

func connectInternal(t *testing.T, url string) *nats.Conn {
	t.Helper()
	nc, err := nats.Connect(url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	return nc
}

// newServedGroup is a group on a server of the test's own; serve starts
// its Serve, which stops, and must return only ctx's error, when the test
// ends.
func newServedGroup(t *testing.T) (g *Group, serve func()) {
	t.Helper()
	srv := natstest.RunServer(t)
	g = NewGroup(connection.NewFixed(connectInternal(t, srv.URL())), supervisor.Events{})
	return g, func() {
		ctx, cancel := context.WithCancel(context.Background())
		served := make(chan error, 1)
		go func() { served <- g.Serve(ctx) }()
		t.Cleanup(func() {
			cancel()
			if err := <-served; err != nil && !errors.Is(err, context.Canceled) {
				t.Errorf("Serve: %v", err)
			}
		})
	}
}
