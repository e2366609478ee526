// Command tracing runs a Client traced with OpenTelemetry, on the
// embedded server. An order published to a JetStream stream reaches a
// handler, which asks a request handler for its price with the ctx it was
// given; the OpenTelemetry SDK's stdout exporter prints every span, one
// JSON object per line, and the last line says the trace they share:
//
//	cd examples/tracing && go run .
//
// Corral's package tracing takes only the OpenTelemetry API: the
// application chooses the SDK, its exporter and its sampler, and gives
// the Client its tracer provider with corral.WithTracer(tracing.New(tp)).
// This example is a module of its own, so that the SDK and its exporter
// stay out of the library's go.mod.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
	"time"

	"go.opentelemetry.io/otel/exporters/stdout/stdouttrace"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"github.com/corral-go/corral"
	"github.com/corral-go/corral/consumer"
	"github.com/corral-go/corral/embedded"
	"github.com/corral-go/corral/stream"
	"github.com/corral-go/corral/tracing"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "tracing:", err)
		os.Exit(1)
	}
}

// run publishes one order and waits for its price, then stops the Client
// and the tracer provider, which prints the spans to out, then the trace.
func run(ctx context.Context, out io.Writer) error {
	exporter, err := stdouttrace.New(stdouttrace.WithWriter(out))
	if err != nil {
		return err
	}
	tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(exporter))
	// Shut down (which exports what is left) once the Client has stopped:
	// its handlers' spans end before Run returns.
	traceID, price, err := order(ctx, tp)
	if err := errors.Join(err, tp.Shutdown(context.WithoutCancel(ctx))); err != nil {
		return err
	}
	fmt.Fprintf(out, "order priced %s; every span above is in trace %s\n", price, traceID)
	return nil
}

// order runs a Client traced by tp until one order has been priced, and
// returns the order's trace id and its price.
func order(ctx context.Context, tp *sdktrace.TracerProvider) (traceID, price string, err error) {
	dir, err := os.MkdirTemp("", "corral-tracing")
	if err != nil {
		return "", "", err
	}
	defer os.RemoveAll(dir)
	var cfg corral.Config
	cfg.Name, cfg.Server.StoreDir = "tracing", dir
	cfg.Streams = map[string]stream.Config{"ORDERS": {Subjects: []string{"orders.>"}}}
	c, err := corral.New(cfg, corral.WithEmbeddedServer(embedded.New), corral.WithTracer(tracing.New(tp)))
	if err != nil {
		return "", "", err
	}
	priced := make(chan string, 1)
	// The handler's ctx carries its span: the request it makes with it
	// continues the trace.
	err = c.Handle("fulfil", consumer.Config{Subject: "orders.new", JetStream: consumer.JetStream{Stream: "ORDERS"}},
		consumer.HandlerFunc(func(ctx context.Context, m *consumer.Msg) error {
			reply, err := c.Request(ctx, "svc.price", m.Data())
			if err != nil {
				return err
			}
			select {
			case priced <- string(reply.Data):
			default: // a redelivery: priced already
			}
			return nil
		}))
	if err != nil {
		return "", "", err
	}
	err = c.HandleRequest("price", consumer.Config{Subject: "svc.price"},
		consumer.RequestFunc(func(context.Context, *consumer.Msg) (consumer.Reply, error) {
			return consumer.Reply{Data: []byte("$42")}, nil
		}))
	if err != nil {
		return "", "", err
	}

	runCtx, stop := context.WithCancel(ctx)
	stopped := make(chan error, 1)
	go func() { stopped <- c.Run(runCtx) }()
	defer func() {
		stop()
		err = errors.Join(err, <-stopped)
	}()
	waitCtx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if err := c.Ready(waitCtx); err != nil {
		return "", "", err
	}

	// The application's own span is the root of the order's trace.
	spanCtx, span := tp.Tracer("example").Start(waitCtx, "checkout")
	_, err = c.PublishSync(spanCtx, "orders.new", []byte("3 x widget"))
	span.End()
	if err != nil {
		return "", "", err
	}
	select {
	case price = <-priced:
		return span.SpanContext().TraceID().String(), price, nil
	case <-waitCtx.Done():
		return "", "", fmt.Errorf("waiting for the price: %w", waitCtx.Err())
	}
}
