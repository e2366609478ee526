package stream_test

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/corral-go/corral"
	"github.com/corral-go/corral/embedded"
	"github.com/corral-go/corral/stream"
)

// Declare creates a stream, or updates it to match; a change the server
// cannot make in place is an error that names the stream.
func ExampleConfig_Declare() {
	dir, _ := os.MkdirTemp("", "stream-example")
	defer os.RemoveAll(dir)
	srv, _ := embedded.New(corral.ServerConfig{StoreDir: dir})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ctx) }()
	defer func() { cancel(); <-done }()
	wctx, wcancel := context.WithTimeout(ctx, 10*time.Second)
	defer wcancel()
	url, _ := srv.ClientURL(wctx)
	nc, err := nats.Connect(url)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer nc.Close()
	js, _ := jetstream.New(nc)

	orders := stream.Config{Subjects: []string{"orders.>"}, Retention: "workqueue", MaxAge: time.Hour}
	s, err := orders.Declare(wctx, js, "ORDERS")
	if err != nil {
		fmt.Println(err)
		return
	}
	info := s.CachedInfo()
	fmt.Println(info.Config.Name, info.Config.Subjects, info.Config.Retention)

	orders.Retention = "limits"
	_, err = orders.Declare(wctx, js, "ORDERS")
	fmt.Println(err != nil)
	// Output:
	// ORDERS [orders.>] WorkQueue
	// true
}
