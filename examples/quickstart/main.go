// Command quickstart starts a Corral client on the embedded nats-server
// with a handler, a request/reply endpoint, a JetStream handler, a KV
// bucket with a watch and an object store, uses them, shows the
// supervision tree and its events, and exits.
//
//	go run ./examples/quickstart           # run once and exit 0
//	go run ./examples/quickstart -serve    # keep running, serving the status page, until interrupted
//	NATS_URL=nats://127.0.0.1:4222 go run ./examples/quickstart
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"maps"
	"os"
	"os/signal"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/corral-go/corral"
	"github.com/corral-go/corral/codec"
	"github.com/corral-go/corral/consumer"
	"github.com/corral-go/corral/embedded"
	"github.com/corral-go/corral/kv"
	"github.com/corral-go/corral/objectstore"
	"github.com/corral-go/corral/ops"
	"github.com/corral-go/corral/stream"
	"github.com/corral-go/corral/supervisor"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "quickstart:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, args []string, out io.Writer) error {
	fs := flag.NewFlagSet("quickstart", flag.ContinueOnError)
	serve := fs.Bool("serve", false, "keep running until interrupted, serving the status page")
	listen := fs.String("listen", "127.0.0.1:8080", "with -serve, where the status page and metrics are served (port 0: any free port)")
	configPath := fs.String("config", "", "YAML configuration file (optional)")
	if err := fs.Parse(args); err != nil {
		return err
	}

	cfg, err := loadConfig(*configPath)
	if err != nil {
		return err
	}
	if *serve && cfg.Ops.Listen == "" {
		cfg.Ops.Listen = *listen
	}
	p := &printer{out: out}
	client, err := corral.New(cfg, corral.WithEmbeddedServer(embedded.New), corral.WithOps(ops.New), corral.WithEventHook(p.event))
	if err != nil {
		return err
	}
	greeted, ordered := make(chan string, 1), make(chan string, 1)
	if err := declare(client, greeted, ordered); err != nil {
		return err
	}
	settings, changes, err := watchSettings(client)
	if err != nil {
		return err
	}

	runCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- client.Run(runCtx) }()

	demoCtx, demoCancel := context.WithTimeout(ctx, 30*time.Second)
	err = demo(demoCtx, client, greeted, ordered, p)
	if err == nil {
		err = demoSettings(demoCtx, settings, changes, p)
	}
	if err == nil {
		err = demoObjects(demoCtx, client, p)
	}
	if err == nil {
		p.printf("\ntree:\n%s\n", client.Status())
	}
	demoCancel()
	if err == nil && *serve {
		p.printf("serving; interrupt to stop\n")
		<-ctx.Done()
	}
	cancel()
	if runErr := <-done; err == nil {
		err = runErr
	}
	if err != nil {
		return err
	}
	p.printf("\nstopped:\n%s", client.Status())
	return nil
}

// loadConfig reads the configuration file, if any, and fills in what the
// quickstart needs that the file did not declare: its name, the settings
// bucket and the files store. NATS_URL, when set, replaces the embedded
// server with the servers it lists.
func loadConfig(path string) (corral.Config, error) {
	cfg, err := corral.LoadConfig(path)
	if err != nil {
		return cfg, err
	}
	if cfg.Name == "" {
		cfg.Name = "quickstart"
	}
	if url := os.Getenv("NATS_URL"); url != "" {
		cfg.Connection.Servers = strings.Split(url, ",")
	}
	if cfg.KV == nil {
		cfg.KV = map[string]kv.Config{}
	}
	if _, ok := cfg.KV["settings"]; !ok {
		cfg.KV["settings"] = kv.Config{History: 5}
	}
	if cfg.ObjectStores == nil {
		cfg.ObjectStores = map[string]objectstore.Config{}
	}
	if _, ok := cfg.ObjectStores["files"]; !ok {
		cfg.ObjectStores["files"] = objectstore.Config{}
	}
	return cfg, nil
}

// Order is what the orders handler takes, decoded from JSON.
type Order struct {
	ID       int    `json:"id"`
	Item     string `json:"item"`
	Quantity int    `json:"quantity"`
}

// declare binds a handler, a JetStream handler and a request/reply
// endpoint to the client. Each is declared with its settings in code;
// a configuration file's handlers section may retune any of them by name.
func declare(client *corral.Client, greeted chan<- string, ordered chan<- string) error {
	greetings := consumer.Config{Subject: "quickstart.greet", Workers: 2, QueueSize: 16}
	greet := consumer.HandlerFunc(func(ctx context.Context, m *consumer.Msg) error {
		greeted <- string(m.Data())
		return nil
	})
	if err := client.Handle("greetings", greetings, greet); err != nil {
		return err
	}

	// At least once: acked when the handler returns nil, redelivered with
	// backoff when it fails. The stream is declared if it is missing.
	orders := consumer.Config{
		Subject: "quickstart.orders.>",
		Workers: 4,
		JetStream: consumer.JetStream{
			Stream:       "QUICKSTART",
			Consumer:     "orders",
			CreateStream: &stream.Config{Subjects: []string{"quickstart.orders.>"}, MaxAge: time.Hour},
		},
	}
	// A typed handler: the payload is decoded from JSON into an Order; one
	// that cannot be decoded is never retried (dead-lettered or
	// terminated) and never reaches the function.
	order := consumer.Typed(func(ctx context.Context, o Order, m *consumer.Msg) error {
		md := m.Metadata()
		ordered <- fmt.Sprintf("order #%d: %d x %s (stream sequence %d, delivery %d)",
			o.ID, o.Quantity, o.Item, md.Sequence.Stream, md.NumDelivered)
		return nil
	})
	if err := client.Handle("orders", orders, order); err != nil {
		return err
	}

	// A request handler's error goes back to the caller as a service
	// error, with its code.
	clock := consumer.RequestFunc(func(ctx context.Context, m *consumer.Msg) (consumer.Reply, error) {
		if len(m.Data()) > 0 {
			return consumer.Reply{}, consumer.Errorf(400, "the clock takes no arguments")
		}
		return consumer.Reply{Data: []byte(time.Now().UTC().Format(time.RFC3339))}, nil
	})
	return client.HandleRequest("clock", consumer.Config{Subject: "quickstart.time"}, clock)
}

// greeting is what the settings bucket holds, as JSON.
type greeting struct {
	Text  string `json:"text"`
	Shout bool   `json:"shout"`
}

// watchSettings opens the settings bucket and declares a supervised watch
// of its greeting key: it sees every change once and in order, even
// across a server restart or a replaced connection.
func watchSettings(client *corral.Client) (*kv.Bucket[greeting], <-chan kv.Entry[greeting], error) {
	raw, err := client.KV("settings")
	if err != nil {
		return nil, nil, err
	}
	settings := kv.Typed(raw, codec.JSON[greeting]{})
	changes := make(chan kv.Entry[greeting], 8)
	keys := kv.WatchConfig{Keys: []string{"greeting"}, UpdatesOnly: true}
	w, err := settings.Watch("settings-watch", keys, func(ctx context.Context, e kv.Entry[greeting]) error {
		select {
		case changes <- e:
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	})
	if err != nil {
		return nil, nil, err
	}
	return settings, changes, client.AddWatch(w)
}

// demoSettings changes a setting twice and shows what the watch saw.
func demoSettings(ctx context.Context, settings *kv.Bucket[greeting], changes <-chan kv.Entry[greeting],
	p *printer,
) error {
	next := func() (kv.Entry[greeting], error) {
		select {
		case e := <-changes:
			return e, nil
		case <-ctx.Done():
			return kv.Entry[greeting]{}, fmt.Errorf("the settings watch saw nothing: %w", ctx.Err())
		}
	}
	if e, err := next(); err != nil || e.Op != kv.Synced {
		return fmt.Errorf("settings watch did not start: %v %w", e.Op, err)
	}
	if _, err := settings.Put(ctx, "greeting", greeting{Text: "hello"}); err != nil {
		return err
	}
	// Read, modify, compare-and-set, retried if another writer got there
	// first.
	if _, err := settings.Update(ctx, "greeting", func(old greeting, _ bool) (greeting, error) {
		old.Shout = true
		return old, nil
	}); err != nil {
		return err
	}
	for range 2 {
		e, err := next()
		if err != nil {
			return err
		}
		p.printf("watch settings-watch saw %s %s = %+v (revision %d)\n", e.Op, e.Key, e.Value, e.Revision)
	}
	return nil
}

// demoObjects puts an object in chunks and gets it back, its digest
// verified.
func demoObjects(ctx context.Context, client *corral.Client, p *printer) error {
	files, err := client.ObjectStore("files")
	if err != nil {
		return err
	}
	report := strings.Repeat("corral,nats,jetstream\n", 1000)
	info, err := files.Put(ctx, "report.csv", strings.NewReader(report))
	if err != nil {
		return err
	}
	var got strings.Builder
	if _, err := files.Get(ctx, "report.csv", &got); err != nil {
		return err
	}
	p.printf("object report.csv: put %d bytes in %d chunks, got %d bytes back, digest %s verified\n",
		info.Size, info.Chunks, got.Len(), info.Digest)
	return nil
}

// demo waits until the client is ready (connected, publisher and
// handlers too), then uses it.
func demo(ctx context.Context, client *corral.Client, greeted, ordered <-chan string, p *printer) error {
	if err := client.Ready(ctx); err != nil {
		return err // it names what is not ready
	}
	nc, err := client.Conn(ctx)
	if err != nil {
		return err
	}
	rtt, err := nc.RTT()
	if err != nil {
		return err
	}
	p.printf("round trip to the server: %v\n", rtt.Round(time.Microsecond))

	// Core NATS, at most once, on the client's live connection.
	if err := client.PublishCore(ctx, "quickstart.greet", []byte("hello, corral")); err != nil {
		return err
	}
	select {
	case g := <-greeted:
		p.printf("handler greetings received: %q\n", g)
	case <-ctx.Done():
		return fmt.Errorf("no greeting: %w", ctx.Err())
	}
	// A request: bounded by ctx, on whatever connection is live; a service
	// error comes back as a *consumer.ServiceError.
	reply, err := client.Request(ctx, "quickstart.time", nil)
	if err != nil {
		return err
	}
	p.printf("endpoint clock answered: %s\n", reply.Data)
	var se *consumer.ServiceError
	if _, err := client.Request(ctx, "quickstart.time", []byte("now?")); !errors.As(err, &se) {
		return fmt.Errorf("the clock took an argument: %v", err)
	}
	p.printf("endpoint clock refused an argument: code %d, %q\n", se.Code, se.Description)

	// The buffered publisher: accepted at once, sent when connected,
	// confirmed by the stream's ack.
	data, err := json.Marshal(Order{ID: 1, Item: "widget", Quantity: 3})
	if err != nil {
		return err
	}
	ack, err := client.PublishSync(ctx, "quickstart.orders.new", data)
	if err != nil {
		return err
	}
	p.printf("published %s: stream %s stored it at sequence %d\n", data, ack.Stream, ack.Sequence)
	select {
	case o := <-ordered:
		p.printf("handler orders processed %s\n", o)
	case <-ctx.Done():
		return fmt.Errorf("no order: %w", ctx.Err())
	}
	return nil
}

func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// printer writes events one a line; the hook is called from several
// goroutines.
type printer struct {
	mu  sync.Mutex
	out io.Writer
}

func (p *printer) printf(format string, args ...any) {
	p.mu.Lock()
	defer p.mu.Unlock()
	fmt.Fprintf(p.out, format, args...)
}

func (p *printer) event(e corral.Event) {
	if e.Level() < supervisor.InfoLevel {
		return
	}
	fields := supervisor.EventFields(e).Map()
	var b strings.Builder
	for _, k := range slices.Sorted(maps.Keys(fields)) {
		fmt.Fprintf(&b, " %s=%v", k, fields[k])
	}
	p.printf("event: %s%s\n", e.Kind(), b.String())
	if l, ok := e.(corral.OpsListening); ok {
		p.printf("status page: http://%s/  (metrics: http://%s/metrics)\n", l.Addr, l.Addr)
	}
}
