package objectstore_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/corral-go/corral"
	"github.com/corral-go/corral/connection"
	"github.com/corral-go/corral/embedded"
	"github.com/corral-go/corral/objectstore"
)

// connected runs fn with the connection to an embedded server, as a
// corral.Client gives its stores, and stops both once fn returns.
func connected(fn func(ctx context.Context, src connection.Source)) {
	dir, _ := os.MkdirTemp("", "objectstore-example")
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

// A store declared on first use, on the connection src (a
// connection.Supervisor, or connection.Fixed around a *nats.Conn). Put
// and Get stream any io.Reader and io.Writer in 128 KiB chunks.
func ExampleOpen() {
	connected(func(ctx context.Context, src connection.Source) {
		reports, err := objectstore.Open("reports", objectstore.Config{}, src)
		if err != nil {
			fmt.Println(err)
			return
		}
		info, err := reports.Put(ctx, "2026-11.csv", strings.NewReader("day,total\n1,42\n"))
		fmt.Println(info.Name, info.Size, info.Chunks, err)
		var b strings.Builder
		_, err = reports.Get(ctx, "2026-11.csv", &b) // the digest is verified at the end
		fmt.Printf("%q %v\n", b.String(), err)
	})
	// Output:
	// 2026-11.csv 15 1 <nil>
	// "day,total\n1,42\n" <nil>
}

// PutBytes and GetBytes hold the object in memory; a put replaces the
// object once it is stored whole.
func ExampleStore_PutBytes() {
	connected(func(ctx context.Context, src connection.Source) {
		reports, _ := objectstore.Open("reports", objectstore.Config{}, src)
		_, err := reports.PutBytes(ctx, "latest.csv", []byte("v1"))
		fmt.Println(err)
		_, err = reports.PutBytes(ctx, "latest.csv", []byte("v2"))
		fmt.Println(err)
		data, err := reports.GetBytes(ctx, "latest.csv")
		fmt.Println(string(data), err)
		_, err = reports.GetBytes(ctx, "missing.csv")
		fmt.Println(errors.Is(err, objectstore.ErrNotFound))
	})
	// Output:
	// <nil>
	// <nil>
	// v2 <nil>
	// true
}

// A watch delivers the current objects, then Synced, then every change.
// Run it in a supervision tree (corral's Client does) to have it
// restarted after an error: it resumes after the last change it
// delivered.
func ExampleStore_Watch() {
	connected(func(ctx context.Context, src connection.Source) {
		reports, _ := objectstore.Open("reports", objectstore.Config{}, src)
		_, _ = reports.PutBytes(ctx, "old.csv", []byte("1"))
		seen := make(chan objectstore.Change)
		w, err := reports.Watch("print-reports", objectstore.WatchConfig{},
			func(ctx context.Context, c objectstore.Change) error {
				select {
				case seen <- c:
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
			switch c := <-seen; {
			case c.Synced: // the current objects are delivered; changes follow
				fmt.Println("synced")
			case c.Info.Deleted:
				fmt.Println("deleted", c.Info.Name)
			default:
				fmt.Println("put", c.Info.Name, c.Info.Size)
			}
		}
		next()
		next()
		_, _ = reports.PutBytes(ctx, "new.csv", []byte("22"))
		next()
		_ = reports.Delete(ctx, "old.csv")
		next()
		stop()
		fmt.Println(<-done)
	})
	// Output:
	// put old.csv 1
	// synced
	// put new.csv 2
	// deleted old.csv
	// context canceled
}
