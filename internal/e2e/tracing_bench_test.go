package e2e_test

import (
	"context"
	"testing"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"

	"github.com/corral-go/corral"
	"github.com/corral-go/corral/consumer"
	"github.com/corral-go/corral/embedded"
	"github.com/corral-go/corral/stream"
	"github.com/corral-go/corral/tracing"
)

// BenchmarkTracing runs the same round trips through a Client without
// tracing (off), with a no-op tracer provider (noop), with an SDK provider
// whose sampler records nothing (unsampled), and with one that records
// every span and exports none (sampled):
//
//   - request: Request -> request handler -> reply;
//   - core: PublishCore -> core handler, waiting for the handler;
//   - jetstream: Publish -> JetStream handler, waiting for the handler.
//
// Run it with go test -run X -bench Tracing -count 5.
func BenchmarkTracing(b *testing.B) {
	providers := []struct {
		name string
		tp   func() trace.TracerProvider
	}{
		{"off", func() trace.TracerProvider { return nil }},
		{"noop", func() trace.TracerProvider { return noop.NewTracerProvider() }},
		{"unsampled", func() trace.TracerProvider {
			return sdktrace.NewTracerProvider(sdktrace.WithSampler(sdktrace.NeverSample()))
		}},
		{"sampled", func() trace.TracerProvider {
			return sdktrace.NewTracerProvider(sdktrace.WithSampler(sdktrace.AlwaysSample()))
		}},
	}
	for _, scenario := range []string{"request", "core", "jetstream"} {
		for _, p := range providers {
			b.Run(scenario+"/"+p.name, func(b *testing.B) {
				c, done := benchClient(b, p.tp())
				ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
				defer cancel()
				data := []byte("0123456789abcdef")
				b.ReportAllocs()
				b.ResetTimer()
				for b.Loop() {
					var err error
					switch scenario {
					case "request":
						_, err = c.Request(ctx, "bench.svc", data)
					case "core":
						err = c.PublishCore(ctx, "bench.core", data)
						<-done
					case "jetstream":
						_, err = c.Publish(ctx, "bench.js", data)
						<-done
					}
					if err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}

// benchClient runs a Client traced by tp (nil: untraced) with a request
// handler on bench.svc, a core handler on bench.core and a JetStream
// handler on bench.js; the last two send on done for each message. It
// stops when the benchmark ends.
func benchClient(b *testing.B, tp trace.TracerProvider) (*corral.Client, <-chan struct{}) {
	b.Helper()
	var cfg corral.Config
	cfg.Name = "bench"
	cfg.Server.StoreDir = b.TempDir()
	cfg.Streams = map[string]stream.Config{"BENCH": {Subjects: []string{"bench.js"}, Storage: "memory"}}
	opts := []corral.Option{corral.WithEmbeddedServer(embedded.New)}
	if tp != nil {
		opts = append(opts, corral.WithTracer(tracing.New(tp)))
	}
	c, err := corral.New(cfg, opts...)
	if err != nil {
		b.Fatal(err)
	}
	done := make(chan struct{}, 1)
	signal := consumer.HandlerFunc(func(context.Context, *consumer.Msg) error {
		done <- struct{}{}
		return nil
	})
	for _, err := range []error{
		c.HandleRequest("svc", consumer.Config{Subject: "bench.svc"},
			consumer.RequestFunc(func(_ context.Context, m *consumer.Msg) (consumer.Reply, error) {
				return consumer.Reply{Data: m.Data()}, nil
			})),
		c.Handle("core", consumer.Config{Subject: "bench.core"}, signal),
		c.Handle("js", consumer.Config{Subject: "bench.js", JetStream: consumer.JetStream{Stream: "BENCH"}}, signal),
	} {
		if err != nil {
			b.Fatal(err)
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	stopped := make(chan error, 1)
	go func() { stopped <- c.Run(ctx) }()
	b.Cleanup(func() {
		cancel()
		if err := <-stopped; err != nil {
			b.Error(err)
		}
		if sdk, ok := tp.(*sdktrace.TracerProvider); ok {
			_ = sdk.Shutdown(context.Background())
		}
	})
	readyCtx, readyCancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer readyCancel()
	if err := c.Ready(readyCtx); err != nil {
		b.Fatal(err)
	}
	return c, done
}
