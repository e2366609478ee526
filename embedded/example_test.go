package embedded_test

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/corral-go/corral"
	"github.com/corral-go/corral/embedded"
)

// A Server runs nats-server with JetStream in the process; ClientURL
// waits until it accepts connections.
func ExampleServer() {
	dir, _ := os.MkdirTemp("", "embedded-example")
	defer os.RemoveAll(dir)
	srv, err := embedded.New(corral.ServerConfig{StoreDir: dir})
	if err != nil {
		fmt.Println(err)
		return
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ctx) }()
	defer func() { cancel(); <-done }()

	wctx, wcancel := context.WithTimeout(ctx, 10*time.Second)
	defer wcancel()
	url, err := srv.ClientURL(wctx)
	if err != nil {
		fmt.Println(err)
		return
	}
	nc, err := nats.Connect(url)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer nc.Close()
	js, _ := jetstream.New(nc)
	info, err := js.AccountInfo(wctx)
	fmt.Println("JetStream:", err == nil && info != nil)
	// Output:
	// JetStream: true
}
