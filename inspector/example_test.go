package inspector_test

import (
	"context"
	"fmt"
	"os"
	"sync"
	"time"

	"github.com/corral-go/corral"
	"github.com/corral-go/corral/embedded"
	"github.com/corral-go/corral/tasks"
)

// A Client's inspector reads its task queues from their streams: here,
// three tasks waiting for a worker, then a pause.
func Example() {
	dir, _ := os.MkdirTemp("", "inspector-example")
	defer os.RemoveAll(dir)
	cfg := corral.Config{Name: "shop", Server: corral.ServerConfig{StoreDir: dir}}
	cfg.Tasks = map[string]tasks.Config{"invoices": {}}
	client, err := corral.New(cfg, corral.WithEmbeddedServer(embedded.New))
	if err != nil {
		fmt.Println(err)
		return
	}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() { _ = client.Run(ctx) })
	defer wg.Wait()
	defer cancel()
	wctx, wcancel := context.WithTimeout(ctx, 10*time.Second)
	defer wcancel()
	if err := client.Ready(wctx); err != nil {
		fmt.Println(err)
		return
	}
	for _, id := range []string{"inv-1", "inv-2", "inv-3"} {
		e, err := client.EnqueueTask(wctx, "invoices", []byte(id), tasks.WithID(id))
		if err == nil {
			err = e.Wait(wctx)
		}
		if err != nil {
			fmt.Println(err)
			return
		}
	}
	q, err := client.Inspector().Queue(wctx, "invoices")
	if err != nil {
		fmt.Println(err)
		return
	}
	page, _ := q.List(wctx, tasks.ListOptions{State: tasks.StateWaiting})
	for _, t := range page.Tasks {
		fmt.Println(t.ID, t.State)
	}
	_ = q.Pause(wctx, time.Now().Add(time.Hour))
	c, err := q.Counts(wctx)
	fmt.Println(c.WaitingTotal(), !c.PausedUntil.IsZero(), err)
	// Output:
	// inv-1 waiting
	// inv-2 waiting
	// inv-3 waiting
	// 3 true <nil>
}
