package corral_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/corral-go/corral"
	"github.com/corral-go/corral/codec"
	"github.com/corral-go/corral/consumer"
	"github.com/corral-go/corral/embedded"
	"github.com/corral-go/corral/kv"
)

// A Client with no server configured runs the embedded nats-server with
// JetStream and connects to it.
func ExampleClient_Run() {
	dir, _ := os.MkdirTemp("", "corral-example")
	defer os.RemoveAll(dir)

	var cfg corral.Config
	cfg.Name = "example"
	cfg.Server.StoreDir = dir
	c, err := corral.New(cfg, corral.WithEmbeddedServer(embedded.New))
	if err != nil {
		fmt.Println(err)
		return
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- c.Run(ctx) }()

	waitCtx, waitCancel := context.WithTimeout(ctx, 10*time.Second)
	defer waitCancel()
	if err := c.Ready(waitCtx); err != nil {
		fmt.Println(err)
	}
	for _, ch := range c.Status().Children {
		fmt.Println(ch.Name, ch.State)
	}
	fmt.Println("connection", c.Status().Connection.State)

	cancel()
	fmt.Println("Run:", <-done)
	// Output:
	// server running
	// connection running
	// publisher running
	// discovery running
	// connection connected
	// Run: <nil>
}

// Handlers run on bounded worker pools; request handlers answer callers.
func ExampleClient_HandleRequest() {
	dir, _ := os.MkdirTemp("", "corral-example")
	defer os.RemoveAll(dir)
	var cfg corral.Config
	cfg.Server.StoreDir = dir
	c, _ := corral.New(cfg, corral.WithEmbeddedServer(embedded.New))

	err := c.HandleRequest("upper", consumer.Config{Subject: "svc.upper", Workers: 4}, consumer.RequestFunc(func(ctx context.Context, m *consumer.Msg) (consumer.Reply, error) {
		if len(m.Data()) == 0 {
			return consumer.Reply{}, consumer.Errorf(400, "empty")
		}
		return consumer.Reply{Data: bytes.ToUpper(m.Data())}, nil
	}))
	if err != nil {
		fmt.Println(err)
		return
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- c.Run(ctx) }()
	defer func() { cancel(); <-done }()

	// Ready: connected, and the handler subscribed.
	waitCtx, waitCancel := context.WithTimeout(ctx, 10*time.Second)
	defer waitCancel()
	if err := c.Ready(waitCtx); err != nil {
		fmt.Println(err)
		return
	}
	nc, err := c.Conn(waitCtx)
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, req := range []string{"hello", ""} {
		reply, err := nc.Request("svc.upper", []byte(req), 5*time.Second)
		switch {
		case err != nil:
			fmt.Println(err)
		case consumer.ResponseError(reply) != nil:
			fmt.Println(consumer.ResponseError(reply))
		default:
			fmt.Println(string(reply.Data))
		}
	}
	// Output:
	// HELLO
	// service error 400: empty
}

// Configuration comes from YAML and CORRAL_* environment variables; every
// mistake is reported at once.
func ExampleConfig_Validate() {
	cfg, err := corral.ParseConfig([]byte(`
connection:
  servers: [http://127.0.0.1:4222]
  ping_interval: -1s
restart: {mode: forever}
`))
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(cfg.Validate())
	// Output:
	// invalid config: connection.servers[0]: http://127.0.0.1:4222: scheme must be nats, tls, ws or wss; connection.ping_interval: must not be negative, got -1s; restart.mode: "forever" is not one of permanent, transient, temporary
}

// Buckets are declared in the configuration and typed in code.
func ExampleClient_KV() {
	dir, _ := os.MkdirTemp("", "corral-example")
	defer os.RemoveAll(dir)
	var cfg corral.Config
	cfg.Server.StoreDir = dir
	cfg.KV = map[string]kv.Config{"counters": {History: 5}}
	c, _ := corral.New(cfg, corral.WithEmbeddedServer(embedded.New))
	raw, err := c.KV("counters")
	if err != nil {
		fmt.Println(err)
		return
	}
	counters := kv.Typed(raw, codec.JSON[int]{})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- c.Run(ctx) }()
	defer func() { cancel(); <-done }()

	opCtx, opCancel := context.WithTimeout(ctx, 10*time.Second)
	defer opCancel()
	if _, err := counters.Put(opCtx, "visits", 41); err != nil {
		fmt.Println(err)
		return
	}
	e, err := counters.Update(opCtx, "visits", func(old int, exists bool) (int, error) { return old + 1, nil })
	fmt.Println(e.Value, e.Revision, err)
	_, err = counters.Get(opCtx, "nobody")
	fmt.Println(errors.Is(err, kv.ErrKeyNotFound))
	_, err = counters.Put(opCtx, "no spaces", 1)
	fmt.Println(errors.Is(err, kv.ErrInvalidKey))
	// Output:
	// 42 2 <nil>
	// true
	// true
}

// A watch is a supervised child: it sees every change once and in order,
// and resumes where it stopped after a failure or a server restart.
func ExampleClient_AddWatch() {
	dir, _ := os.MkdirTemp("", "corral-example")
	defer os.RemoveAll(dir)
	var cfg corral.Config
	cfg.Server.StoreDir = dir
	// History keeps revisions the watch has not read yet: with history 1,
	// the delete below could replace the put before the watch sees it.
	cfg.KV = map[string]kv.Config{"settings": {History: 5}}
	c, _ := corral.New(cfg, corral.WithEmbeddedServer(embedded.New))
	raw, _ := c.KV("settings")
	settings := kv.Typed(raw, codec.String{})

	seen := make(chan string, 8)
	w, err := settings.Watch("print-settings", kv.WatchConfig{Keys: []string{"mode"}},
		func(ctx context.Context, e kv.Entry[string]) error {
			seen <- fmt.Sprintf("%s %s=%s", e.Op, e.Key, e.Value)
			return nil
		})
	if err == nil {
		err = c.AddWatch(w)
	}
	if err != nil {
		fmt.Println(err)
		return
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- c.Run(ctx) }()
	defer func() { cancel(); <-done }()

	next := func() string {
		select {
		case s := <-seen:
			return s
		case <-time.After(10 * time.Second):
			return "the watch delivered nothing:\n" + c.Status().String()
		}
	}
	fmt.Println(next()) // the current values (none), then changes
	opCtx, opCancel := context.WithTimeout(ctx, 10*time.Second)
	defer opCancel()
	_, _ = settings.Put(opCtx, "mode", "fast")
	_, _ = settings.Put(opCtx, "other", "ignored")
	_ = settings.Delete(opCtx, "mode")
	fmt.Println(next())
	fmt.Println(next())
	// Output:
	// synced =
	// put mode=fast
	// delete mode=
}
