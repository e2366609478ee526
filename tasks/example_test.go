package tasks_test

import (
	"context"
	"fmt"
	"os"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/corral-go/corral"
	"github.com/corral-go/corral/connection"
	"github.com/corral-go/corral/embedded"
	"github.com/corral-go/corral/tasks"
)

// A worker of the queue "render" that runs one task at a time, so that
// they run in the order enqueued; a corral.Client's HandleTasks and
// Enqueue do the same under its supervision tree.
func ExampleNew() {
	dir, _ := os.MkdirTemp("", "tasks-example")
	defer os.RemoveAll(dir)
	srv, _ := embedded.New(corral.ServerConfig{StoreDir: dir})
	conn, _ := connection.New(connection.Config{Embedded: srv})
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	defer wg.Wait()
	defer cancel()
	for _, s := range []interface{ Serve(context.Context) error }{srv, conn} {
		wg.Go(func() { _ = s.Serve(ctx) })
	}

	done := make(chan struct{}, 3)
	w, err := tasks.New("render", tasks.Config{MaxConcurrency: 1}, conn, tasks.HandlerFunc(
		func(ctx context.Context, t *tasks.Task) error {
			if string(t.Data()) == "flaky" && t.Attempt() == 0 {
				return tasks.HandBack(0) // not a failure: offered again
			}
			fmt.Printf("%s %s attempt=%d\n", t.ID(), t.Data(), t.Attempt())
			done <- struct{}{}
			return nil
		}))
	if err != nil {
		fmt.Println(err)
		return
	}
	wg.Go(func() { _ = w.Serve(ctx) })

	wctx, wcancel := context.WithTimeout(ctx, 30*time.Second)
	defer wcancel()
	nc, _, _ := conn.Conn(wctx)
	js, _ := jetstream.New(nc)
	name, queue := tasks.Config{}.QueueStream("render")
	if _, err := queue.Declare(wctx, js, name); err != nil {
		fmt.Println(err)
		return
	}
	for i, data := range []string{"intro", "flaky", "credits"} {
		m := &nats.Msg{Subject: queue.Subjects[0], Data: []byte(data), Header: nats.Header{}}
		m.Header.Set(jetstream.MsgIDHeader, fmt.Sprintf("job-%d", i))
		if _, err := js.PublishMsg(wctx, m); err != nil {
			fmt.Println(err)
			return
		}
	}
	for range 3 {
		select {
		case <-done:
		case <-wctx.Done():
			fmt.Println("timed out")
			return
		}
	}
	// Output:
	// job-0 intro attempt=0
	// job-2 credits attempt=0
	// job-1 flaky attempt=1
}
