// Command quickstart starts a Corral client on the embedded nats-server,
// shows its supervision tree and connection events, and exits.
//
//	go run ./examples/quickstart           # run once and exit 0
//	go run ./examples/quickstart -serve    # keep running until interrupted
//	NATS_URL=nats://127.0.0.1:4222 go run ./examples/quickstart
package main

import (
	"context"
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

	"go.uber.org/zap/zapcore"

	"github.com/corral-go/corral"
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
	serve := fs.Bool("serve", false, "keep running until interrupted")
	configPath := fs.String("config", "", "YAML configuration file (optional)")
	if err := fs.Parse(args); err != nil {
		return err
	}

	cfg, err := corral.LoadConfig(*configPath)
	if err != nil {
		return err
	}
	if cfg.Name == "" {
		cfg.Name = "quickstart"
	}
	if url := os.Getenv("NATS_URL"); url != "" {
		cfg.Connection.Servers = strings.Split(url, ",")
	}
	p := &printer{out: out}
	client, err := corral.New(cfg, corral.WithEventHook(p.event))
	if err != nil {
		return err
	}

	runCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- client.Run(runCtx) }()

	connectCtx, connectCancel := context.WithTimeout(ctx, 30*time.Second)
	nc, err := client.Conn(connectCtx)
	connectCancel()
	if err != nil {
		cancel()
		<-done
		return fmt.Errorf("not connected: %w", err)
	}
	rtt, err := nc.RTT()
	if err != nil {
		cancel()
		<-done
		return err
	}
	p.printf("round trip to the server: %v\n", rtt.Round(time.Microsecond))
	p.printf("\ntree:\n%s\n", client.Status())

	if *serve {
		p.printf("serving; interrupt to stop\n")
		<-ctx.Done()
	}
	cancel()
	if err := <-done; err != nil {
		return err
	}
	p.printf("\nstopped:\n%s", client.Status())
	return nil
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
	if e.Level() < zapcore.InfoLevel {
		return
	}
	enc := zapcore.NewMapObjectEncoder()
	_ = e.MarshalLogObject(enc)
	var b strings.Builder
	for _, k := range slices.Sorted(maps.Keys(enc.Fields)) {
		fmt.Fprintf(&b, " %s=%v", k, enc.Fields[k])
	}
	p.printf("event: %s%s\n", e.Kind(), b.String())
}
