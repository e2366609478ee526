package main

import (
	"context"
	"os"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"strings"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/corral-go/corral"
	"github.com/corral-go/corral/consumer"
)

// The idle scenario measures what a connected, idle client costs over the
// process without it: goroutines, live heap, and the CPU of the whole
// process (the in-process server included, for both alike) while it
// idles. Corral's client has what a small service has: one core handler
// and one JetStream handler, each with its worker, and the publisher.

const (
	idleStream = "BENCHIDLE"
	settle     = time.Second
	idleWindow = 10 * time.Second // how long each round idles; -quick: quickIdle
	quickIdle  = 3 * time.Second
)

type footprint struct {
	client, server int // goroutines on each side of the process
	heap           uint64
}

// snapshot counts goroutines, telling the in-process server's (a stack in
// nats-server's package: its side of each connection, and of each
// JetStream consumer) from the rest, and the live heap after a GC.
func snapshot() footprint {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	buf := make([]byte, 1<<20)
	for {
		n := runtime.Stack(buf, true)
		if n < len(buf) {
			buf = buf[:n]
			break
		}
		buf = make([]byte, 2*len(buf))
	}
	f := footprint{heap: ms.HeapAlloc}
	for _, g := range strings.Split(string(buf), "\n\n") {
		if strings.Contains(g, "nats-server/v2/") {
			f.server++
		} else {
			f.client++
		}
	}
	return f
}

// idleMeasure takes the footprint before start, then after the client
// settled, and the CPU over the idle window.
func idleMeasure(ctx context.Context, e *env, start func() (stop func(), err error)) (sample, error) {
	// What the scenario before left behind settles first.
	select {
	case <-time.After(settle):
	case <-ctx.Done():
		return sample{}, ctx.Err()
	}
	before := snapshot()
	stop, err := start()
	if err != nil {
		return sample{}, err
	}
	defer stop()
	select {
	case <-time.After(settle):
	case <-ctx.Done():
		return sample{}, ctx.Err()
	}
	after := snapshot()
	if e.profileName != "" {
		if f, err := os.Create(filepath.Join(e.profileDir, e.profileName+".goroutines.txt")); err == nil {
			_ = pprof.Lookup("goroutine").WriteTo(f, 1)
			_ = f.Close()
		}
	}
	window := idleWindow
	if e.quick {
		window = quickIdle
	}
	cpu0, t0 := cpuTime(), time.Now()
	select {
	case <-time.After(window):
	case <-ctx.Done():
		return sample{}, ctx.Err()
	}
	cpu := float64(cpuTime()-cpu0) / float64(time.Since(t0)) * 100
	heapMB := (float64(after.heap) - float64(before.heap)) / (1 << 20)
	return sample{value: float64(after.client - before.client),
		extra: map[string]float64{"heap_mb": heapMB, "cpu_pct": cpu, "server_goroutines": float64(after.server - before.server)}}, nil
}

func rawIdle(ctx context.Context, e *env, _ int) (sample, error) {
	return idleMeasure(ctx, e, func() (func(), error) {
		nc, err := nats.Connect(e.srv.URL())
		if err != nil {
			return nil, err
		}
		return nc.Close, nil
	})
}

func corralIdle(ctx context.Context, e *env, _ int) (sample, error) {
	nc, err := connect(e)
	if err != nil {
		return sample{}, err
	}
	_, err = e.freshStream(ctx, nc, idleStream, idleStream)
	nc.Close()
	if err != nil {
		return sample{}, err
	}
	return idleMeasure(ctx, e, func() (func(), error) {
		nop := consumer.HandlerFunc(func(context.Context, *consumer.Msg) error { return nil })
		c, err := startCorral(ctx, e, corral.Config{}, func(c *corral.Client) error {
			if err := c.Handle("core", consumer.Config{Subject: "bench.idle"}, nop); err != nil {
				return err
			}
			return c.Handle("jetstream", consumer.Config{JetStream: consumer.JetStream{Stream: idleStream}}, nop)
		})
		if err != nil {
			return nil, err
		}
		if err := c.waitReady(ctx); err != nil {
			c.stop()
			return nil, err
		}
		return func() { _ = c.stop() }, nil
	})
}
