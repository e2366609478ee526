package ops_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"time"

	"github.com/corral-go/corral"
	"github.com/corral-go/corral/consumer"
	"github.com/corral-go/corral/embedded"
	"github.com/corral-go/corral/ops"
)

// The ops endpoints, mounted on an application's own server under /ops/.
func ExampleNew() {
	dir, _ := os.MkdirTemp("", "corral-example")
	defer os.RemoveAll(dir)
	var cfg corral.Config
	cfg.Name = "shop"
	cfg.Server.StoreDir = dir
	c, err := corral.New(cfg, corral.WithEmbeddedServer(embedded.New))
	if err != nil {
		fmt.Println(err)
		return
	}
	h, err := ops.New(c)
	if err != nil {
		fmt.Println(err)
		return
	}
	_ = c.Handle("orders", consumer.Config{Subject: "orders.created"}, consumer.HandlerFunc(func(context.Context, *consumer.Msg) error { return nil }))
	mux := http.NewServeMux()
	mux.Handle("/ops/", http.StripPrefix("/ops", h)) // behind the application's auth
	srv := httptest.NewServer(mux)
	defer srv.Close()
	show := func(path string) {
		resp, err := http.Get(srv.URL + path)
		if err != nil {
			fmt.Println(err)
			return
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		for _, line := range strings.Split(strings.TrimSpace(string(body)), "\n") {
			if !strings.HasPrefix(line, "#") && (path != "/ops/metrics" || strings.HasPrefix(line, "corral_handler_ready")) {
				fmt.Println(resp.StatusCode, line)
			}
		}
	}
	show("/ops/healthz")

	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- c.Run(ctx) }()
	waitCtx, waitCancel := context.WithTimeout(ctx, 10*time.Second)
	defer waitCancel()
	if err := c.Ready(waitCtx); err != nil {
		fmt.Println(err)
	}
	show("/ops/healthz")
	show("/ops/readyz")
	show("/ops/metrics")
	cancel()
	fmt.Println("Run:", <-done)
	// Output:
	// 503 not running
	// 200 ok
	// 200 ready
	// 200 corral_handler_ready{client="shop",handler="orders"} 1
	// Run: <nil>
}
