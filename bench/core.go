package main

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/micro"

	"github.com/corral-go/corral"
	"github.com/corral-go/corral/consumer"
)

// coreWork is a core pub -> handler scenario: n messages published on one
// connection, handled on another, timed until the last is handled.
type coreWork struct {
	workers int
	do      func()
	size    int // payload bytes; 0: 128
}

func noop()     {}
func sleep1ms() { time.Sleep(time.Millisecond) }
func coreSubj(w coreWork, impl string) string {
	return fmt.Sprintf("bench.core.%d.%d.%s", w.workers, w.size, impl)
}

// publishCore publishes n messages on subject from its own connection and
// waits until handled reaches n; the rate is over that whole time.
func publishCore(ctx context.Context, e *env, subject string, size, n int, handled *atomic.Int64) (sample, error) {
	pub, err := connect(e)
	if err != nil {
		return sample{}, err
	}
	defer pub.Close()
	e.startClock()
	start := time.Now()
	data := payloadOf(size)
	for range n {
		if err := pub.Publish(subject, data); err != nil {
			return sample{}, err
		}
	}
	if err := pub.Flush(); err != nil {
		return sample{}, err
	}
	if err := waitCount(ctx, handled.Load, n); err != nil {
		return sample{}, err
	}
	e.stopClock()
	return withBytes(sample{value: float64(n) / time.Since(start).Seconds(), msgs: n}, len(data)), nil
}

// rawCallback: the handler is nc.Subscribe's callback.
func rawCallback(w coreWork) runFunc {
	return func(ctx context.Context, e *env, n int) (sample, error) {
		nc, err := connect(e)
		if err != nil {
			return sample{}, err
		}
		defer nc.Close()
		var handled atomic.Int64
		subj := coreSubj(w, "raw")
		sub, err := nc.Subscribe(subj, func(*nats.Msg) {
			w.do()
			handled.Add(1)
		})
		if err != nil {
			return sample{}, err
		}
		_ = sub.SetPendingLimits(-1, -1)
		if err := nc.Flush(); err != nil {
			return sample{}, err
		}
		return publishCore(ctx, e, subj, w.size, n, &handled)
	}
}

// rawPool: a hand-written pool of w.workers goroutines ranging over
// ChanSubscribe's channel. nats.go drops what does not fit the channel, so
// it holds the whole round, as Corral's handler holds it (a queue of 1024
// and nats.go's pending buffer unbounded behind it).
func rawPool(w coreWork) runFunc {
	return func(ctx context.Context, e *env, n int) (sample, error) {
		nc, err := connect(e)
		if err != nil {
			return sample{}, err
		}
		defer nc.Close()
		var handled atomic.Int64
		queue := make(chan *nats.Msg, max(n, 1024))
		var wg sync.WaitGroup
		for range w.workers {
			wg.Go(func() {
				for range queue {
					w.do()
					handled.Add(1)
				}
			})
		}
		defer func() { close(queue); wg.Wait() }()
		subj := coreSubj(w, "pool")
		sub, err := nc.ChanSubscribe(subj, queue)
		if err != nil {
			return sample{}, err
		}
		defer func() { _ = sub.Unsubscribe() }()
		if err := nc.Flush(); err != nil {
			return sample{}, err
		}
		return publishCore(ctx, e, subj, w.size, n, &handled)
	}
}

// corralCore: a Corral handler on the subject, w.workers workers and a
// queue of 1024, nats.go's pending buffer unbounded as the raw ones.
func corralCore(w coreWork) runFunc {
	return func(ctx context.Context, e *env, n int) (sample, error) {
		var handled atomic.Int64
		subj := coreSubj(w, "corral")
		c, err := startCorral(ctx, e, corral.Config{}, func(c *corral.Client) error {
			hc := consumer.Config{Subject: subj, Workers: w.workers, QueueSize: 1024, PendingMsgs: -1, PendingBytes: -1}
			return c.Handle("bench", hc, consumer.HandlerFunc(func(context.Context, *consumer.Msg) error {
				w.do()
				handled.Add(1)
				return nil
			}))
		})
		if err != nil {
			return sample{}, err
		}
		defer c.stop()
		if err := c.waitReady(ctx); err != nil {
			return sample{}, err
		}
		return publishCore(ctx, e, subj, w.size, n, &handled)
	}
}

// request/reply: one caller sends n requests one after another on its own
// connection; the rate and the round-trip latencies are reported.
func requests(ctx context.Context, e *env, subject string, n int) (sample, error) {
	nc, err := connect(e)
	if err != nil {
		return sample{}, err
	}
	defer nc.Close()
	lat := make([]time.Duration, 0, n)
	e.startClock()
	start := time.Now()
	for range n {
		t := time.Now()
		reply, err := nc.RequestWithContext(ctx, subject, payload)
		if err != nil {
			return sample{}, err
		}
		if len(reply.Data) != len(payload) {
			return sample{}, fmt.Errorf("reply of %d bytes", len(reply.Data))
		}
		lat = append(lat, time.Since(t))
	}
	e.stopClock()
	return sample{value: float64(n) / time.Since(start).Seconds(), msgs: n, lat: lat}, nil
}

func rawMicro(ctx context.Context, e *env, n int) (sample, error) {
	nc, err := connect(e)
	if err != nil {
		return sample{}, err
	}
	defer nc.Close()
	svc, err := micro.AddService(nc, micro.Config{
		Name: "bench", Version: "1.0.0",
		Endpoint: &micro.EndpointConfig{Subject: "bench.req.raw", Handler: micro.HandlerFunc(func(r micro.Request) {
			_ = r.Respond(r.Data())
		})},
	})
	if err != nil {
		return sample{}, err
	}
	defer func() { _ = svc.Stop() }()
	if err := nc.Flush(); err != nil {
		return sample{}, err
	}
	return requests(ctx, e, "bench.req.raw", n)
}

func corralRequest(ctx context.Context, e *env, n int) (sample, error) {
	c, err := startCorral(ctx, e, corral.Config{}, func(c *corral.Client) error {
		echo := consumer.RequestFunc(func(_ context.Context, m *consumer.Msg) (consumer.Reply, error) {
			return consumer.Reply{Data: m.Data()}, nil
		})
		return c.HandleRequest("bench", consumer.Config{Subject: "bench.req.corral"}, echo)
	})
	if err != nil {
		return sample{}, err
	}
	defer c.stop()
	if err := c.waitReady(ctx); err != nil {
		return sample{}, err
	}
	return requests(ctx, e, "bench.req.corral", n)
}
