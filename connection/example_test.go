package connection_test

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/corral-go/corral"
	"github.com/corral-go/corral/connection"
	"github.com/corral-go/corral/embedded"
	"github.com/corral-go/corral/supervisor"
)

// A Supervisor keeps the connection alive under a tree; dependents ask it
// for the live connection, and ask again once it is replaced.
func ExampleSupervisor() {
	dir, _ := os.MkdirTemp("", "connection-example")
	defer os.RemoveAll(dir)
	srv, _ := embedded.New(corral.ServerConfig{StoreDir: dir})
	conn, err := connection.New(connection.Config{Name: "example", Embedded: srv})
	if err != nil {
		fmt.Println(err)
		return
	}
	tree := supervisor.NewTree("app", supervisor.Events{})
	_ = tree.Add("server", srv, supervisor.Policy{})
	_ = tree.Add("connection", conn, supervisor.Policy{})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- tree.Serve(ctx) }()
	defer func() { cancel(); <-done }()

	wctx, wcancel := context.WithTimeout(ctx, 10*time.Second)
	defer wcancel()
	var src connection.Source = conn
	nc, gone, err := src.Conn(wctx)
	if err != nil {
		fmt.Println(err)
		return
	}
	sub, _ := nc.SubscribeSync("greetings")
	_ = nc.Publish("greetings", []byte("hello"))
	m, err := sub.NextMsg(5 * time.Second)
	fmt.Println(string(m.Data), err)
	select {
	case <-gone:
		fmt.Println("replaced")
	default:
		fmt.Println(conn.Status().State, conn.Status().Generation)
	}
	// Output:
	// hello <nil>
	// connected 1
}

// A Fixed lends a connection the application manages to what takes a
// Source: handlers, the publisher, buckets and stores.
func ExampleNewFixed() {
	dir, _ := os.MkdirTemp("", "connection-example")
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
	src := connection.NewFixed(nc)
	got, _, err := src.Conn(wctx)
	fmt.Println(got == nc, err, src.Status().State)
	nc.Close()
	_, _, err = src.Conn(wctx)
	fmt.Println(err)
	// Output:
	// true <nil> connected
	// connection: closed: nats: connection closed
}

// A client of a leaf node reaches its hub's JetStream by the hub's
// domain; an account that imports another's JetStream, by the prefix it
// imports it under.
func ExampleJetStreamAPI() {
	for _, api := range []connection.JetStreamAPI{{}, {Domain: "hub"}, {APIPrefix: "JS.orders.API"}} {
		fmt.Printf("%s: %s\n", api, api.Prefix())
	}
	fmt.Println(connection.JetStreamAPI{Domain: "hub.east"}.Validate())
	// Output:
	// the account's own: $JS.API.
	// domain hub: $JS.hub.API.
	// api_prefix JS.orders.API: JS.orders.API.
	// invalid config: domain: "hub.east" must be one subject token: no '.', '*', '>' or whitespace
}
