package fleet_test

import (
	"context"
	"fmt"
	"os"
	"sync"
	"time"

	"github.com/corral-go/corral"
	"github.com/corral-go/corral/embedded"
	"github.com/corral-go/corral/fleet"
)

// Every Client answers the fleet's requests: one ping finds the
// instances of a service, with their hosts, pids and uptimes.
func ExamplePing() {
	dir, _ := os.MkdirTemp("", "fleet-example")
	defer os.RemoveAll(dir)
	client, err := corral.New(corral.Config{Name: "orders", Server: corral.ServerConfig{StoreDir: dir}},
		corral.WithEmbeddedServer(embedded.New))
	if err != nil {
		fmt.Println(err)
		return
	}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() { _ = client.Run(ctx) })
	defer wg.Wait()
	defer cancel()
	rctx, rcancel := context.WithTimeout(ctx, 10*time.Second)
	defer rcancel()
	if err := client.Ready(rctx); err != nil {
		fmt.Println(err)
		return
	}
	nc, _ := client.Conn(rctx)
	found, err := fleet.Ping(rctx, nc, fleet.Query{Name: "orders", Wait: 500 * time.Millisecond})
	for _, in := range found {
		fmt.Println(in.Name, in.ID == client.Identity().ID, in.PID == os.Getpid())
	}
	fmt.Println(err)
	// Output:
	// orders true true
	// <nil>
}
