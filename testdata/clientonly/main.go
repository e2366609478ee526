// Command clientonly is the smallest program that runs a Client against
// configured servers: what it links is what every such application
// links (see TestClientOnlyProgramLinksNoServer).
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"

	"github.com/corral-go/corral"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	var cfg corral.Config
	cfg.Connection.Servers = []string{"nats://127.0.0.1:4222"}
	c, err := corral.New(cfg)
	if err == nil {
		err = c.Run(ctx)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}
