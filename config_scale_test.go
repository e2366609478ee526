package corral_test

import (
	"context"
	"fmt"
	"runtime"
	"strings"
	"testing"

	"github.com/corral-go/corral"
	"github.com/corral-go/corral/consumer"
)

// handlersConfig is a file declaring n core handlers, as a template
// writes them.
func handlersConfig(n int) []byte {
	var b strings.Builder
	b.WriteString("connection: {servers: [nats://127.0.0.1:4222]}\nhandlers:\n")
	for i := range n {
		fmt.Fprintf(&b, "  h%d: {subject: orders.%d, workers: 2, restart: {mode: transient}}\n", i, i)
	}
	return []byte(b.String())
}

var noop = consumer.HandlerFunc(func(context.Context, *consumer.Msg) error { return nil })

// bindAll binds the handlers of handlersConfig(n) to a new Client, and
// returns the bytes allocated per Handle of the last binds.
func bindAll(tb testing.TB, n int) uint64 {
	tb.Helper()
	cfg, err := corral.ParseConfig(handlersConfig(n))
	if err != nil {
		tb.Fatal(err)
	}
	c, err := corral.New(cfg)
	if err != nil {
		tb.Fatal(err)
	}
	defer c.Close()
	const measured = 8
	for i := range n - measured - 1 {
		if err := c.Handle(fmt.Sprintf("h%d", i), consumer.Config{}, noop); err != nil {
			tb.Fatal(err)
		}
	}
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	for i := n - measured; i < n; i++ {
		if err := c.Handle(fmt.Sprintf("h%d", i), consumer.Config{}, noop); err != nil {
			tb.Fatal(err)
		}
	}
	runtime.ReadMemStats(&after)
	return (after.TotalAlloc - before.TotalAlloc) / measured
}

// Binding a handler costs as much with thousands declared as with a few:
// the file's settings for it are found by its name, not by going through
// every key and stream of the file. (Not parallel: the bytes counted are
// those the whole process allocates.)
func TestHandleCostDoesNotGrowWithTheHandlers(t *testing.T) {
	few, many := bindAll(t, 16), bindAll(t, 4096)
	t.Logf("bytes allocated per Handle: %d with 16 handlers declared, %d with 4096", few, many)
	if many > 2*few {
		t.Fatalf("Handle allocates %d bytes with 4096 handlers declared, %d with 16: its cost grows with the file", many, few)
	}
}

// BenchmarkConfigHandlers reads, validates and binds a file of n
// handlers: each handler costs the same (ns/handler), however many there
// are.
func BenchmarkConfigHandlers(b *testing.B) {
	for _, n := range []int{1 << 10, 1 << 12, 1 << 14} {
		data := handlersConfig(n)
		b.Run(fmt.Sprintf("handlers=%d", n), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				cfg, err := corral.ParseConfig(data)
				if err != nil {
					b.Fatal(err)
				}
				c, err := corral.New(cfg)
				if err != nil {
					b.Fatal(err)
				}
				for i := range n {
					if err := c.Handle(fmt.Sprintf("h%d", i), consumer.Config{}, noop); err != nil {
						b.Fatal(err)
					}
				}
				_ = c.Close()
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/handler")
		})
	}
}
