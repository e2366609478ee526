package corral_test

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/corral-go/corral"
)

// A Client with no server configured runs the embedded nats-server with
// JetStream and connects to it.
func ExampleClient_Run() {
	dir, _ := os.MkdirTemp("", "corral-example")
	defer os.RemoveAll(dir)

	var cfg corral.Config
	cfg.Name = "example"
	cfg.Server.StoreDir = dir
	c, err := corral.New(cfg)
	if err != nil {
		fmt.Println(err)
		return
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- c.Run(ctx) }()

	waitCtx, waitCancel := context.WithTimeout(ctx, 10*time.Second)
	defer waitCancel()
	if _, err := c.Conn(waitCtx); err != nil {
		fmt.Println(err)
	}
	for _, ch := range c.Status().Children {
		fmt.Println(ch.Name, ch.State)
	}
	fmt.Println("connection", c.Status().Connection.State)

	cancel()
	fmt.Println("Run:", <-done)
	// Output:
	// server running
	// connection running
	// connection connected
	// Run: <nil>
}

// Configuration comes from YAML and CORRAL_* environment variables; every
// mistake is reported at once.
func ExampleConfig_Validate() {
	cfg, err := corral.ParseConfig([]byte(`
connection:
  servers: [http://127.0.0.1:4222]
  ping_interval: -1s
restart: {mode: forever}
`))
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(cfg.Validate())
	// Output:
	// invalid config: connection.servers[0]: http://127.0.0.1:4222: scheme must be nats, tls, ws or wss; connection.ping_interval: must not be negative, got -1s; restart.mode: "forever" is not one of permanent, transient, temporary
}
