package main

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/corral-go/corral/fleet"
)

// askFleet asks every process of the bench for its status, as `corral ps`
// does, every every until ctx ends, on a connection of its own to url; it
// returns a stop that waits for it and says how often it asked and how
// many answers came.
func askFleet(ctx context.Context, url string, every time.Duration) (stop func() (asked, answers int64), err error) {
	nc, err := nats.Connect(url, nats.Name("bench-ps"))
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(ctx)
	var n, got atomic.Int64
	var wg sync.WaitGroup
	wg.Go(func() {
		t := time.NewTicker(every)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
			found, _ := fleet.Status(ctx, nc, fleet.Query{Wait: every / 2})
			n.Add(1)
			got.Add(int64(len(found)))
		}
	})
	return func() (int64, int64) {
		cancel()
		wg.Wait()
		nc.Close()
		return n.Load(), got.Load()
	}, nil
}
