package embedded_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/corral-go/corral"
	"github.com/corral-go/corral/embedded"
)

func TestEmbeddedServerKeepsItsPortAcrossRestarts(t *testing.T) {
	t.Parallel()
	srv, err := embedded.New(corral.ServerConfig{StoreDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	var urls []string
	for range 2 {
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- srv.Serve(ctx) }()
		wctx, wcancel := context.WithTimeout(ctx, 10*time.Second)
		u, err := srv.ClientURL(wctx)
		wcancel()
		if err != nil {
			t.Fatal(err)
		}
		nc, err := nats.Connect(u)
		if err != nil {
			t.Fatal(err)
		}
		nc.Close()
		urls = append(urls, u)
		cancel()
		if err := <-done; !errors.Is(err, context.Canceled) {
			t.Fatal(err)
		}
	}
	if urls[0] != urls[1] {
		t.Fatalf("restarted on %s, first on %s", urls[1], urls[0])
	}
}
