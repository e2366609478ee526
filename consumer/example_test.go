package consumer_test

import (
	"context"
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/corral-go/corral"
	"github.com/corral-go/corral/connection"
	"github.com/corral-go/corral/consumer"
	"github.com/corral-go/corral/embedded"
	"github.com/corral-go/corral/supervisor"
	"github.com/nats-io/nats.go"
)

// A Group on its own, without the corral.Client: an embedded server, a
// supervised connection, a core handler and a request handler. (The
// Client builds the same tree from its configuration.)
func Example() {
	dir, _ := os.MkdirTemp("", "consumer-example")
	defer os.RemoveAll(dir)
	srv, _ := embedded.New(corral.ServerConfig{StoreDir: dir})
	conn, _ := connection.New(connection.Config{Embedded: srv})
	subscribed := make(chan string, 2)
	group := consumer.NewGroup(conn, supervisor.Events{Hook: func(ev supervisor.Event) {
		if s, ok := ev.(consumer.Subscribed); ok {
			select {
			case subscribed <- s.Handler:
			default:
			}
		}
	}})

	handled := make(chan string, 1)
	err := group.Handle("orders", consumer.Config{Subject: "orders.created", Workers: 4},
		consumer.HandlerFunc(func(ctx context.Context, m *consumer.Msg) error {
			handled <- string(m.Data())
			return nil // an error would be counted as a failure
		}))
	if err != nil {
		fmt.Println(err)
		return
	}
	err = group.HandleRequest("prices", consumer.Config{Subject: "svc.prices", Overflow: consumer.Reject},
		consumer.RequestFunc(func(ctx context.Context, m *consumer.Msg) (consumer.Reply, error) {
			if string(m.Data()) != "apple" {
				return consumer.Reply{}, consumer.Errorf(404, "no price for %q", m.Data())
			}
			return consumer.Reply{Data: []byte("0.42")}, nil
		}))
	if err != nil {
		fmt.Println(err)
		return
	}

	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	for _, s := range []interface{ Serve(context.Context) error }{srv, conn} {
		wg.Go(func() { _ = s.Serve(ctx) })
	}
	defer wg.Wait()
	defer cancel()
	// The handlers drain before the connection closes, as a Client (or a
	// supervisor.Tree, in reverse order of Add) stops them.
	gctx, gcancel := context.WithCancel(ctx)
	stopped := make(chan error, 1)
	go func() { stopped <- group.Serve(gctx) }()
	defer func() {
		gcancel()
		<-stopped
	}()

	wctx, wcancel := context.WithTimeout(ctx, 10*time.Second)
	defer wcancel()
	nc, _, err := conn.Conn(wctx)
	if err != nil {
		fmt.Println(err)
		return
	}
	for range 2 { // messages published from now on reach the handlers
		select {
		case <-subscribed:
		case <-wctx.Done():
			fmt.Println("not subscribed:", wctx.Err())
			return
		}
	}

	_ = nc.Publish("orders.created", []byte("order 1"))
	fmt.Println("handled:", <-handled)

	reply, err := nc.RequestWithContext(wctx, "svc.prices", []byte("apple"))
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("apple:", string(reply.Data), consumer.ResponseError(reply))
	reply, err = nc.RequestWithContext(wctx, "svc.prices", []byte("pear"))
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("pear:", consumer.ResponseError(reply))
	// Output:
	// handled: order 1
	// apple: 0.42 <nil>
	// pear: service error 404: no price for "pear"
}

// exampleGroup runs declare's handlers on an embedded server, then calls
// use with a connection to it once they have all subscribed.
func exampleGroup(declare func(g *consumer.Group) int, use func(ctx context.Context, nc *nats.Conn)) {
	dir, _ := os.MkdirTemp("", "consumer-example")
	defer os.RemoveAll(dir)
	srv, _ := embedded.New(corral.ServerConfig{StoreDir: dir})
	conn, _ := connection.New(connection.Config{Embedded: srv})
	// The hook counts and signals without blocking: one signal waiting is
	// enough to have the count read again.
	var count atomic.Int64
	subscribed := make(chan struct{}, 1)
	group := consumer.NewGroup(conn, supervisor.Events{Hook: func(ev supervisor.Event) {
		if _, ok := ev.(consumer.Subscribed); ok {
			count.Add(1)
			select {
			case subscribed <- struct{}{}:
			default:
			}
		}
	}})
	n := declare(group)
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	for _, s := range []interface{ Serve(context.Context) error }{srv, conn} {
		wg.Go(func() { _ = s.Serve(ctx) })
	}
	defer wg.Wait()
	defer cancel()
	gctx, gcancel := context.WithCancel(ctx)
	stopped := make(chan error, 1)
	go func() { stopped <- group.Serve(gctx) }()
	defer func() {
		gcancel()
		<-stopped
	}()
	wctx, wcancel := context.WithTimeout(ctx, 10*time.Second)
	defer wcancel()
	nc, _, err := conn.Conn(wctx)
	if err != nil {
		fmt.Println(err)
		return
	}
	for count.Load() < int64(n) {
		select {
		case <-subscribed:
		case <-wctx.Done():
			fmt.Println("not subscribed:", wctx.Err())
			return
		}
	}
	use(wctx, nc)
}
