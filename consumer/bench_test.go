package consumer_test

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/corral-go/corral/connection"
	"github.com/corral-go/corral/consumer"
	"github.com/corral-go/corral/internal/natstest"
	"github.com/corral-go/corral/supervisor"
)

// The benchmarks publish b.N messages of 128 bytes on one connection and
// time until a subscriber on another has handled them all: a raw nats.go
// callback, a hand-written pool behind a callback, and a Corral handler,
// on the same in-process server. Compare them in one run:
//
//	go test -run '^$' -bench Core -count 5 ./consumer

func BenchmarkCore(b *testing.B) {
	srv := natstest.RunServer(b, natstest.WithoutJetStream())
	payload := make([]byte, 128)

	run := func(b *testing.B, subject string, handled *atomic.Int64) {
		pub := benchConn(b, srv.URL())
		b.ReportAllocs()
		b.ResetTimer()
		start := time.Now()
		for range b.N {
			if err := pub.Publish(subject, payload); err != nil {
				b.Fatal(err)
			}
		}
		if err := pub.Flush(); err != nil {
			b.Fatal(err)
		}
		waitHandled(b, handled, b.N)
		b.StopTimer()
		b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "msgs/s")
	}
	sleep := func() { time.Sleep(time.Millisecond) }
	nothing := func() {}

	for _, work := range []struct {
		name    string
		workers int
		do      func()
	}{{"noop", 1, nothing}, {"1ms-64workers", 64, sleep}} {
		b.Run(work.name+"/raw-callback", func(b *testing.B) {
			if work.workers > 1 {
				b.Skip("a callback runs one message at a time")
			}
			nc := benchConn(b, srv.URL())
			var handled atomic.Int64
			sub, err := nc.Subscribe("bench.raw", func(*nats.Msg) {
				work.do()
				handled.Add(1)
			})
			if err != nil {
				b.Fatal(err)
			}
			_ = sub.SetPendingLimits(-1, -1)
			_ = nc.Flush()
			run(b, "bench.raw", &handled)
		})
		b.Run(work.name+"/raw-pool", func(b *testing.B) {
			nc := benchConn(b, srv.URL())
			var handled atomic.Int64
			queue := make(chan *nats.Msg, 1024)
			var wg sync.WaitGroup
			for range work.workers {
				wg.Go(func() {
					for range queue {
						work.do()
						handled.Add(1)
					}
				})
			}
			sub, err := nc.Subscribe("bench.pool", func(m *nats.Msg) { queue <- m })
			if err != nil {
				b.Fatal(err)
			}
			_ = sub.SetPendingLimits(-1, -1)
			_ = nc.Flush()
			run(b, "bench.pool", &handled)
			_ = sub.Unsubscribe()
			close(queue)
			wg.Wait()
		})
		b.Run(work.name+"/corral", func(b *testing.B) {
			nc := benchConn(b, srv.URL())
			var handled atomic.Int64
			sup := consumer.NewGroup(connection.NewFixed(nc), supervisor.Events{})
			h := consumer.HandlerFunc(func(context.Context, *consumer.Msg) error {
				work.do()
				handled.Add(1)
				return nil
			})
			cfg := consumer.Config{Subject: "bench.corral", Workers: work.workers, QueueSize: 1024, PendingMsgs: -1, PendingBytes: -1}
			if err := sup.Handle("bench", cfg, h); err != nil {
				b.Fatal(err)
			}
			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan error, 1)
			go func() { done <- sup.Serve(ctx) }()
			natstest.EventuallyEvery(b, benchWait, time.Millisecond, func() bool { return sup.Status()[0].Ready },
				func() string { return "the handler never subscribed" })
			_ = nc.Flush()
			run(b, "bench.corral", &handled)
			cancel()
			<-done
		})
	}
}

func benchConn(b *testing.B, url string) *nats.Conn {
	nc, err := nats.Connect(url, nats.ErrorHandler(func(*nats.Conn, *nats.Subscription, error) {}))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(nc.Close)
	return nc
}

// The JetStream benchmarks fill a stream with b.N messages of 128 bytes,
// then time until a consumer has handled and acked them all: raw nats.go
// Consume (one handler call at a time, as nats.go runs it), raw Fetch
// batches, and a Corral JetStream handler.
//
//	go test -run '^$' -bench JetStream -count 5 ./consumer
func BenchmarkJetStream(b *testing.B) {
	srv := natstest.RunServer(b)
	sleep := func() { time.Sleep(time.Millisecond) }
	nothing := func() {}
	const workers = 16
	for _, work := range []struct {
		name    string
		workers int
		do      func()
	}{{"noop", 4, nothing}, {"1ms", workers, sleep}} {
		b.Run(work.name+"/raw-consume", func(b *testing.B) {
			js, cons := benchStream(b, srv.URL())
			_ = js
			var handled atomic.Int64
			b.ResetTimer()
			start := time.Now()
			cc, err := cons.Consume(func(m jetstream.Msg) {
				work.do()
				_ = m.Ack()
				handled.Add(1)
			}, jetstream.ConsumeErrHandler(func(jetstream.ConsumeContext, error) {}))
			if err != nil {
				b.Fatal(err)
			}
			waitHandled(b, &handled, b.N)
			b.StopTimer()
			cc.Stop()
			<-cc.Closed()
			b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "msgs/s")
		})
		b.Run(work.name+"/raw-consume-pool", func(b *testing.B) {
			// The hand-written alternative: Consume hands messages to W
			// workers that ack. nats.go keeps pulling while they work.
			_, cons := benchStream(b, srv.URL())
			var handled atomic.Int64
			queue := make(chan jetstream.Msg, 512)
			var wg sync.WaitGroup
			for range work.workers {
				wg.Go(func() {
					for m := range queue {
						work.do()
						_ = m.Ack()
						handled.Add(1)
					}
				})
			}
			b.ResetTimer()
			start := time.Now()
			cc, err := cons.Consume(func(m jetstream.Msg) { queue <- m },
				jetstream.PullMaxMessages(512), jetstream.ConsumeErrHandler(func(jetstream.ConsumeContext, error) {}))
			if err != nil {
				b.Fatal(err)
			}
			waitHandled(b, &handled, b.N)
			b.StopTimer()
			b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "msgs/s")
			cc.Stop()
			<-cc.Closed()
			close(queue)
			wg.Wait()
		})
		b.Run(work.name+"/raw-fetch", func(b *testing.B) {
			if work.workers > 4 {
				b.Skip("fetch batches are handled one message at a time")
			}
			_, cons := benchStream(b, srv.URL())
			b.ResetTimer()
			start := time.Now()
			for done := 0; done < b.N; {
				batch, err := cons.Fetch(min(500, b.N-done), jetstream.FetchMaxWait(5*time.Second))
				if err != nil {
					b.Fatal(err)
				}
				for m := range batch.Messages() {
					work.do()
					_ = m.Ack()
					done++
				}
			}
			b.StopTimer()
			b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "msgs/s")
		})
		b.Run(work.name+"/corral", func(b *testing.B) {
			_, _ = benchStream(b, srv.URL())
			nc := benchConn(b, srv.URL())
			var handled atomic.Int64
			sup := consumer.NewGroup(connection.NewFixed(nc), supervisor.Events{})
			h := consumer.HandlerFunc(func(context.Context, *consumer.Msg) error {
				work.do()
				handled.Add(1)
				return nil
			})
			cfg := consumer.Config{Workers: work.workers, QueueSize: 512, JetStream: consumer.JetStream{Stream: "BENCH", Consumer: "bench", Bind: true}}
			if err := sup.Handle("bench", cfg, h); err != nil {
				b.Fatal(err)
			}
			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan error, 1)
			b.ResetTimer()
			start := time.Now()
			go func() { done <- sup.Serve(ctx) }()
			waitHandled(b, &handled, b.N)
			natstest.EventuallyEvery(b, benchWait, 50*time.Microsecond, func() bool { return sup.Status()[0].Counters.Acked >= uint64(b.N) },
				func() string { return fmt.Sprintf("%d of %d acked", sup.Status()[0].Counters.Acked, b.N) })
			b.StopTimer()
			b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "msgs/s")
			cancel()
			<-done
		})
	}
}

// benchStream creates a stream BENCH holding b.N messages and a durable
// pull consumer "bench" on it.
func benchStream(b *testing.B, url string) (jetstream.JetStream, jetstream.Consumer) {
	b.Helper()
	nc := benchConn(b, url)
	js, err := jetstream.New(nc, jetstream.WithPublishAsyncMaxPending(4000))
	if err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	_ = js.DeleteStream(ctx, "BENCH")
	if _, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: "BENCH", Subjects: []string{"bench.js"}}); err != nil {
		b.Fatal(err)
	}
	payload := make([]byte, 128)
	for range b.N {
		if _, err := js.PublishAsync("bench.js", payload); err != nil {
			b.Fatal(err)
		}
	}
	select {
	case <-js.PublishAsyncComplete():
	case <-ctx.Done():
		b.Fatal("stream not filled")
	}
	cons, err := js.CreateOrUpdateConsumer(ctx, "BENCH", jetstream.ConsumerConfig{Durable: "bench", AckPolicy: jetstream.AckExplicitPolicy,
		MaxAckPending: 10000})
	if err != nil {
		b.Fatal(err)
	}
	return js, cons
}

// benchWait bounds a benchmark's wait for its messages: past it the
// benchmark fails rather than hang.
const benchWait = time.Minute

// waitHandled waits until handled reaches n, polling finely: the wait is
// part of what the benchmark measures.
func waitHandled(b *testing.B, handled *atomic.Int64, n int) {
	b.Helper()
	natstest.EventuallyEvery(b, benchWait, 50*time.Microsecond, func() bool { return handled.Load() >= int64(n) },
		func() string { return fmt.Sprintf("%d of %d handled", handled.Load(), n) })
}
