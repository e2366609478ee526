package publisher_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/corral-go/corral"
	"github.com/corral-go/corral/connection"
	"github.com/corral-go/corral/embedded"
	"github.com/corral-go/corral/publisher"
	"github.com/corral-go/corral/stream"
)

// A publisher on its own, without the corral.Client: an embedded server,
// a supervised connection, and a stream declared on connecting. (The
// Client also stops them in order: the publisher flushes before the
// connection drains.)
func Example() {
	dir, _ := os.MkdirTemp("", "publisher-example")
	defer os.RemoveAll(dir)
	srv, _ := embedded.New(corral.ServerConfig{StoreDir: dir})
	conn, _ := connection.New(connection.Config{Embedded: srv})
	pub, err := publisher.New(publisher.Config{
		Streams: map[string]stream.Config{"ORDERS": {Subjects: []string{"orders.>"}}},
		OnUndelivered: func(msg *nats.Msg, err error) {
			fmt.Println("not stored:", msg.Subject, msg.Header.Get("Nats-Msg-Id"), err)
		},
	}, conn)
	if err != nil {
		fmt.Println(err)
		return
	}

	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	for _, s := range []interface{ Serve(context.Context) error }{srv, conn, pub} {
		wg.Go(func() { _ = s.Serve(ctx) })
	}
	defer wg.Wait()
	defer cancel()

	wctx, wcancel := context.WithTimeout(ctx, 10*time.Second)
	defer wcancel()
	// Accepted at once, sent once the connection is up and ORDERS exists.
	f, err := pub.Publish(wctx, "orders.created", []byte("order 1"), publisher.WithMsgID("order-1"))
	if err != nil {
		fmt.Println(err)
		return
	}
	ack, err := f.Wait(wctx)
	fmt.Println(ack.Stream, ack.Sequence, ack.Duplicate, err)

	// The same Msg-Id again: the stream keeps one copy.
	ack, err = pub.PublishSync(wctx, "orders.created", []byte("order 1"), publisher.WithMsgID("order-1"))
	fmt.Println(ack.Stream, ack.Sequence, ack.Duplicate, err)

	ack, err = pub.PublishSync(wctx, "orders.created", []byte("order 2"))
	fmt.Println(ack.Stream, ack.Sequence, ack.Duplicate, err)
	// Output:
	// ORDERS 1 false <nil>
	// ORDERS 1 true <nil>
	// ORDERS 2 false <nil>
}

// A publisher that is not served (or not served again) is ended with
// Close: each buffered message reaches OnUndelivered with its Msg-Id, and
// its Future fails with ErrStopped. A message that had been sent would
// also carry ErrMaybeStored: publish it again with the same Msg-Id.
func ExampleBuffered_Close() {
	conn, err := connection.New(connection.Config{Servers: []string{"nats://127.0.0.1:4222"}})
	if err != nil {
		fmt.Println(err)
		return
	}
	pub, err := publisher.New(publisher.Config{
		OnUndelivered: func(msg *nats.Msg, err error) {
			fmt.Println("not stored:", msg.Subject, msg.Header.Get("Nats-Msg-Id"), err)
		},
	}, conn)
	if err != nil {
		fmt.Println(err)
		return
	}
	f, err := pub.Publish(context.Background(), "orders.created", []byte("order 3"), publisher.WithMsgID("order-3"))
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("close:", pub.Close())
	_, err = f.Result()
	fmt.Println(errors.Is(err, publisher.ErrStopped), errors.Is(err, publisher.ErrMaybeStored))
	_, err = pub.Publish(context.Background(), "orders.created", []byte("order 4"))
	fmt.Println(err)
	// Output:
	// not stored: orders.created order-3 publisher: stopped
	// close: <nil>
	// true false
	// publisher: stopped
}
