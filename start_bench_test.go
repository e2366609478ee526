package corral_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/corral-go/corral"
	"github.com/corral-go/corral/connection"
	"github.com/corral-go/corral/consumer"
	"github.com/corral-go/corral/internal/natstest"
)

// BenchmarkStartCoreHandlers times a Client from New to Ready with n core
// handlers, as the bench's handlers-core scenarios do; the stop is not
// timed.
func BenchmarkStartCoreHandlers(b *testing.B) {
	srv := natstest.RunServer(b)
	for _, n := range []int{100, 1000} {
		b.Run(fmt.Sprintf("handlers=%d", n), func(b *testing.B) {
			b.ReportAllocs()
			var declaring, running time.Duration
			for b.Loop() {
				t0 := time.Now()
				c, err := corral.New(corral.Config{Connection: connection.Config{Servers: []string{srv.URL()}}})
				if err != nil {
					b.Fatal(err)
				}
				for i := range n {
					if err := c.Handle(fmt.Sprintf("h%d", i), consumer.Config{Subject: fmt.Sprintf("start.%d", i)}, noop); err != nil {
						b.Fatal(err)
					}
				}
				t1 := time.Now()
				ctx, cancel := context.WithCancel(context.Background())
				done := make(chan error, 1)
				go func() { done <- c.Run(ctx) }()
				if err := c.Ready(context.Background()); err != nil {
					b.Fatal(err)
				}
				b.StopTimer()
				declaring += t1.Sub(t0)
				running += time.Since(t1)
				cancel()
				<-done
				b.StartTimer()
			}
			b.ReportMetric(float64(b.Elapsed().Microseconds())/float64(b.N*n), "µs/handler")
			b.ReportMetric(float64(declaring.Microseconds())/float64(b.N*n), "µs-declare/handler")
			b.ReportMetric(float64(running.Microseconds())/float64(b.N*n), "µs-run/handler")
		})
	}
}
