package kv_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync"
	"time"

	"github.com/corral-go/corral"
	"github.com/corral-go/corral/codec"
	"github.com/corral-go/corral/connection"
	"github.com/corral-go/corral/embedded"
	"github.com/corral-go/corral/kv"
)

// connected runs fn with the connection to an embedded server, as a
// corral.Client gives its buckets, and stops both once fn returns.
func connected(fn func(ctx context.Context, src connection.Source)) {
	dir, _ := os.MkdirTemp("", "kv-example")
	defer os.RemoveAll(dir)
	srv, _ := embedded.New(corral.ServerConfig{StoreDir: dir})
	conn, _ := connection.New(connection.Config{Embedded: srv})
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	for _, s := range []interface{ Serve(context.Context) error }{srv, conn} {
		wg.Go(func() { _ = s.Serve(ctx) })
	}
	defer wg.Wait()
	defer cancel()
	wctx, wcancel := context.WithTimeout(ctx, 10*time.Second)
	defer wcancel()
	fn(wctx, conn)
}

type limits struct {
	Max int `json:"max"`
}

// A bucket of JSON values: declared on first use, on the connection src
// (a connection.Supervisor, or connection.Fixed around a *nats.Conn).
func ExampleOpen() {
	connected(func(ctx context.Context, src connection.Source) {
		settings, err := kv.Open("settings", kv.Config{History: 5}, src, codec.JSON[limits]{})
		if err != nil {
			fmt.Println(err)
			return
		}
		rev, err := settings.Put(ctx, "limits.api", limits{Max: 100})
		fmt.Println(rev, err)
		e, err := settings.Get(ctx, "limits.api")
		fmt.Println(e.Key, e.Value.Max, e.Revision, e.Op, err)
		_, err = settings.Create(ctx, "limits.api", limits{Max: 1})
		fmt.Println(errors.Is(err, kv.ErrKeyExists))
		_, err = settings.Get(ctx, "limits.batch")
		fmt.Println(errors.Is(err, kv.ErrKeyNotFound))
	})
	// Output:
	// 1 <nil>
	// limits.api 100 1 put <nil>
	// true
	// true
}

// Update reads, modifies and writes back with compare-and-set, trying
// again when another writer came first.
func ExampleBucket_Update() {
	connected(func(ctx context.Context, src connection.Source) {
		counters, _ := kv.Open("counters", kv.Config{}, src, codec.JSON[int]{})
		for range 3 {
			e, err := counters.Update(ctx, "hits", func(old int, exists bool) (int, error) {
				if !exists {
					return 1, nil
				}
				return old + 1, nil
			})
			fmt.Println(e.Value, e.Revision, err)
		}
	})
	// Output:
	// 1 1 <nil>
	// 2 2 <nil>
	// 3 3 <nil>
}

// A watch delivers the current values, then Synced, then every change.
// Run it in a supervision tree (corral.WatchKV does) to have it restarted
// after an error: it resumes after the last revision it delivered.
func ExampleBucket_Watch() {
	connected(func(ctx context.Context, src connection.Source) {
		settings, _ := kv.Open("settings", kv.Config{History: 5}, src, codec.String{})
		_, _ = settings.Put(ctx, "mode", "fast")
		seen := make(chan kv.Entry[string])
		w, err := settings.Watch("print-mode", kv.WatchConfig{Keys: []string{"mode"}},
			func(ctx context.Context, e kv.Entry[string]) error {
				select {
				case seen <- e:
					return nil
				case <-ctx.Done():
					return ctx.Err()
				}
			})
		if err != nil {
			fmt.Println(err)
			return
		}
		wctx, stop := context.WithCancel(ctx)
		done := make(chan error, 1)
		go func() { done <- w.Serve(wctx) }()
		next := func() {
			switch e := <-seen; e.Op {
			case kv.Synced: // the current values are delivered; changes follow
				fmt.Println("synced")
			case kv.Put:
				fmt.Println("put", e.Key, e.Value)
			default: // Delete, Purge, Expired
				fmt.Println(e.Op, e.Key)
			}
		}
		next()
		next()
		_, _ = settings.Put(ctx, "mode", "slow")
		next()
		_ = settings.Delete(ctx, "mode")
		next()
		stop()
		fmt.Println(<-done)
	})
	// Output:
	// put mode fast
	// synced
	// put mode slow
	// delete mode
	// context canceled
}

// Typed views of one bucket share its declaration: here the raw bytes
// that the JSON codec wrote.
func ExampleTyped() {
	connected(func(ctx context.Context, src connection.Source) {
		settings, _ := kv.Open("settings", kv.Config{}, src, codec.JSON[limits]{})
		raw := kv.Typed(settings, codec.Bytes{})
		_, _ = settings.Put(ctx, "limits.api", limits{Max: 100})
		e, err := raw.Get(ctx, "limits.api")
		fmt.Println(string(e.Value), err)
	})
	// Output:
	// {"max":100} <nil>
}

// One holder at a time: a second TryAcquire fails until the first lease
// is released. The fencing token grows with every acquisition.
func ExampleNewLock() {
	connected(func(ctx context.Context, src connection.Source) {
		cfg := kv.LockConfig{Bucket: "locks", Key: "leader", TTL: 5 * time.Second}
		a, _ := kv.NewLock(cfg, src)
		b, _ := kv.NewLock(cfg, src)
		first, err := a.Acquire(ctx)
		if err != nil {
			fmt.Println(err)
			return
		}
		_, ok, err := b.TryAcquire(ctx)
		fmt.Println("b while a holds it:", ok, err)
		fmt.Println("release:", first.Release(ctx))
		second, ok, err := b.TryAcquire(ctx)
		fmt.Println("b after the release:", ok, err, second.Token > first.Token)
		fmt.Println("release:", second.Release(ctx))
	})
	// Output:
	// b while a holds it: false <nil>
	// release: <nil>
	// b after the release: true <nil> true
	// release: <nil>
}
