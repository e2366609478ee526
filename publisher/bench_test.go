package publisher_test

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/nats-io/nuid"

	"github.com/corral-go/corral/connection"
	"github.com/corral-go/corral/internal/natstest"
	"github.com/corral-go/corral/publisher"
)

// Raw nats.go against the buffered publisher, on the same in-process
// server, 128-byte messages to a file stream:
//
//	go test -run '^$' -bench Publish -count 5 ./publisher
func BenchmarkPublish(b *testing.B) {
	srv := natstest.RunServer(b)
	payload := make([]byte, 128)
	ctx := context.Background()

	fresh := func(b *testing.B) (*nats.Conn, jetstream.JetStream) {
		nc, err := nats.Connect(srv.URL())
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(nc.Close)
		js, err := jetstream.New(nc, jetstream.WithPublishAsyncMaxPending(4000))
		if err != nil {
			b.Fatal(err)
		}
		_ = js.DeleteStream(ctx, "BENCH")
		if _, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: "BENCH", Subjects: []string{"bench"}}); err != nil {
			b.Fatal(err)
		}
		return nc, js
	}
	buffered := func(b *testing.B, nc *nats.Conn) (*publisher.Buffered, func()) {
		p, err := publisher.New(publisher.Config{BufferMsgs: 1 << 20, BufferBytes: 1 << 30, OnFull: publisher.Block}, connection.NewFixed(nc))
		if err != nil {
			b.Fatal(err)
		}
		sctx, cancel := context.WithCancel(ctx)
		done := make(chan error, 1)
		go func() { done <- p.Serve(sctx) }()
		if _, err := p.PublishSync(ctx, "bench", payload); err != nil { // connected and ready
			b.Fatal(err)
		}
		return p, func() { cancel(); <-done }
	}

	b.Run("async/raw", func(b *testing.B) {
		_, js := fresh(b)
		b.ReportAllocs()
		b.ResetTimer()
		start := time.Now()
		for range b.N {
			if _, err := js.PublishAsync("bench", payload, jetstream.WithMsgID(nuid.Next())); err != nil {
				b.Fatal(err)
			}
		}
		<-js.PublishAsyncComplete()
		b.StopTimer()
		b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "msgs/s")
	})
	b.Run("async/corral", func(b *testing.B) {
		nc, _ := fresh(b)
		p, stop := buffered(b, nc)
		defer stop()
		base := p.Status().Acked
		b.ReportAllocs()
		b.ResetTimer()
		start := time.Now()
		for range b.N {
			if _, err := p.Publish(ctx, "bench", payload); err != nil {
				b.Fatal(err)
			}
		}
		natstest.EventuallyEvery(b, time.Minute, 50*time.Microsecond, func() bool { return p.Status().Acked >= base+uint64(b.N) },
			func() string { return fmt.Sprintf("%d of %d acked", p.Status().Acked-base, b.N) })
		b.StopTimer()
		b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "msgs/s")
	})
	latencies := func(b *testing.B, lat []time.Duration, elapsed time.Duration) {
		slices.Sort(lat)
		b.ReportMetric(float64(len(lat))/elapsed.Seconds(), "msgs/s")
		b.ReportMetric(float64(lat[len(lat)/2].Microseconds()), "p50_µs")
		b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds()), "p99_µs")
	}
	b.Run("sync/raw", func(b *testing.B) {
		_, js := fresh(b)
		lat := make([]time.Duration, 0, b.N)
		b.ReportAllocs()
		b.ResetTimer()
		start := time.Now()
		for range b.N {
			t := time.Now()
			if _, err := js.Publish(ctx, "bench", payload); err != nil {
				b.Fatal(err)
			}
			lat = append(lat, time.Since(t))
		}
		b.StopTimer()
		latencies(b, lat, time.Since(start))
	})
	b.Run("sync/corral", func(b *testing.B) {
		nc, _ := fresh(b)
		p, stop := buffered(b, nc)
		defer stop()
		lat := make([]time.Duration, 0, b.N)
		b.ReportAllocs()
		b.ResetTimer()
		start := time.Now()
		for range b.N {
			t := time.Now()
			if _, err := p.PublishSync(ctx, "bench", payload); err != nil {
				b.Fatal(err)
			}
			lat = append(lat, time.Since(t))
		}
		b.StopTimer()
		latencies(b, lat, time.Since(start))
	})
}
