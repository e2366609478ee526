package objectstore_test

import (
	"bytes"
	"context"
	"io"
	"testing"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/corral-go/corral/connection"
	"github.com/corral-go/corral/internal/natstest"
	"github.com/corral-go/corral/objectstore"
)

// Raw nats.go against Corral's store, same server:
//
//	go test -run '^$' -bench . -count 5 ./objectstore
func BenchmarkObjects(b *testing.B) {
	srv := natstest.RunServer(b)
	ctx := context.Background()
	js := natstest.JetStream(b, srv.URL())
	nc := js.Conn()
	// A store each: puts into one store slow down as it accumulates, so
	// sharing one would favour whichever runs first.
	raw, err := js.CreateOrUpdateObjectStore(ctx, jetstream.ObjectStoreConfig{Bucket: "bench-raw"})
	if err != nil {
		b.Fatal(err)
	}
	ours, err := objectstore.Open("bench-corral", objectstore.Config{}, connection.NewFixed(nc))
	if err != nil {
		b.Fatal(err)
	}
	for _, size := range []struct {
		name string
		n    int
	}{{"16KiB", 16 << 10}, {"1MiB", 1 << 20}} {
		data := bytes.Repeat([]byte("x"), size.n)
		b.Run("put/"+size.name+"/raw", func(b *testing.B) {
			b.SetBytes(int64(size.n))
			b.ReportAllocs()
			for range b.N {
				if _, err := raw.Put(ctx, jetstream.ObjectMeta{Name: "obj"}, bytes.NewReader(data)); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run("put/"+size.name+"/corral", func(b *testing.B) {
			b.SetBytes(int64(size.n))
			b.ReportAllocs()
			for range b.N {
				if _, err := ours.Put(ctx, "obj", bytes.NewReader(data)); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run("get/"+size.name+"/raw", func(b *testing.B) {
			b.SetBytes(int64(size.n))
			b.ReportAllocs()
			for range b.N {
				r, err := raw.Get(ctx, "obj")
				if err != nil {
					b.Fatal(err)
				}
				if _, err := io.Copy(io.Discard, r); err != nil {
					b.Fatal(err)
				}
				_ = r.Close()
			}
		})
		b.Run("get/"+size.name+"/corral", func(b *testing.B) {
			b.SetBytes(int64(size.n))
			b.ReportAllocs()
			for range b.N {
				if _, err := ours.Get(ctx, "obj", io.Discard); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
