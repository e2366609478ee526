package middleware_test

import (
	"context"
	"fmt"
	"os"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"go.uber.org/zap"

	"github.com/corral-go/corral"
	"github.com/corral-go/corral/codec"
	"github.com/corral-go/corral/connection"
	"github.com/corral-go/corral/consumer"
	"github.com/corral-go/corral/embedded"
	"github.com/corral-go/corral/kv"
	"github.com/corral-go/corral/middleware"
	"github.com/corral-go/corral/supervisor"
)

// Every handler logged, and one deduplicated by Nats-Msg-Id through a
// bucket whose records expire after a day: the second message with the
// same id is acknowledged without running the handler. (A corral.Client
// takes the same middleware with Client.Use and in a handler's
// consumer.Config.)
func Example() {
	dir, _ := os.MkdirTemp("", "middleware-example")
	defer os.RemoveAll(dir)
	srv, _ := embedded.New(corral.ServerConfig{StoreDir: dir})
	conn, _ := connection.New(connection.Config{Embedded: srv})
	subscribed := make(chan struct{}, 1)
	group := consumer.NewGroup(conn, supervisor.Events{Hook: func(ev supervisor.Event) {
		if _, ok := ev.(consumer.Subscribed); ok {
			select { // again after a reconnect: the hook must never block
			case subscribed <- struct{}{}:
			default:
			}
		}
	}})

	group.Use(middleware.Log(zap.NewNop())) // your logger
	seen, err := kv.Open("charged", kv.Config{TTL: 24 * time.Hour}, conn, codec.Bytes{})
	if err != nil {
		fmt.Println(err)
		return
	}
	skipped := make(chan string, 1)
	dedup := middleware.Dedup(seen, middleware.DedupConfig{OnDuplicate: func(m *consumer.Msg, key string) {
		skipped <- key
	}})
	charged := make(chan string, 1)
	err = group.Handle("charge", consumer.Config{Subject: "orders.paid", Middleware: []consumer.Middleware{dedup}},
		consumer.HandlerFunc(func(ctx context.Context, m *consumer.Msg) error {
			charged <- string(m.Data())
			return nil
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
	<-subscribed

	for range 2 {
		m := nats.NewMsg("orders.paid")
		m.Data = []byte("order 1")
		m.Header.Set(nats.MsgIdHdr, "order-1")
		_ = nc.PublishMsg(m)
	}
	fmt.Println("charged:", <-charged)
	fmt.Println("skipped:", <-skipped)
	// Output:
	// charged: order 1
	// skipped: charge.id.order-1
}
