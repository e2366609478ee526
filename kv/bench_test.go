package kv_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/corral-go/corral/codec"
	"github.com/corral-go/corral/connection"
	"github.com/corral-go/corral/internal/natstest"
	"github.com/corral-go/corral/kv"
)

// Raw nats.go against Corral's bucket, same server, same bucket, 128-byte
// values:
//
//	go test -run '^$' -bench . -count 5 ./kv
func BenchmarkKV(b *testing.B) {
	srv := natstest.RunServer(b)
	ctx := context.Background()
	js := natstest.JetStream(b, srv.URL())
	nc := js.Conn()
	raw, err := js.CreateOrUpdateKeyValue(ctx, jetstream.KeyValueConfig{Bucket: "bench"})
	if err != nil {
		b.Fatal(err)
	}
	ours, err := kv.Open("bench", kv.Config{}, connection.NewFixed(nc), codec.Bytes{})
	if err != nil {
		b.Fatal(err)
	}
	value := make([]byte, 128)
	const keys = 1000
	for i := range keys {
		if _, err := raw.Put(ctx, fmt.Sprintf("k.%d", i), value); err != nil {
			b.Fatal(err)
		}
	}
	key := func(i int) string { return fmt.Sprintf("k.%d", i%keys) }

	b.Run("put/raw", func(b *testing.B) {
		b.ReportAllocs()
		for i := range b.N {
			if _, err := raw.Put(ctx, key(i), value); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("put/corral", func(b *testing.B) {
		b.ReportAllocs()
		for i := range b.N {
			if _, err := ours.Put(ctx, key(i), value); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("get/raw", func(b *testing.B) {
		b.ReportAllocs()
		for i := range b.N {
			if _, err := raw.Get(ctx, key(i)); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("get/corral", func(b *testing.B) {
		b.ReportAllocs()
		for i := range b.N {
			if _, err := ours.Get(ctx, key(i)); err != nil {
				b.Fatal(err)
			}
		}
	})
	// Read, change, compare-and-set: what an update costs by hand and
	// with the Update helper, uncontended.
	b.Run("update/raw", func(b *testing.B) {
		b.ReportAllocs()
		for i := range b.N {
			e, err := raw.Get(ctx, key(i))
			if err != nil {
				b.Fatal(err)
			}
			if _, err := raw.Update(ctx, key(i), e.Value(), e.Revision()); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("update/corral", func(b *testing.B) {
		b.ReportAllocs()
		for i := range b.N {
			if _, err := ours.Update(ctx, key(i), func(old []byte, _ bool) ([]byte, error) { return old, nil }); err != nil {
				b.Fatal(err)
			}
		}
	})
}
