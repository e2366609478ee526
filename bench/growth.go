package main

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/corral-go/corral"
	"github.com/corral-go/corral/consumer"
)

// The growth scenarios measure how a Client's cost grows with its
// handlers: the time from start until every handler is subscribed, and
// the goroutines and live heap each one adds at idle, against raw nats.go
// making the same subscriptions (core) or the same durable consumers and
// Consume calls (JetStream) on one connection.

const (
	growStream = "BENCHGROW"
	growSettle = 500 * time.Millisecond
)

func growthScenarios() []scenario {
	var out []scenario
	for _, n := range []int{1, 100, 1000} {
		out = append(out, scenario{
			name: fmt.Sprintf("handlers-core-%d", n), about: fmt.Sprintf("%d core handlers on one Client: ms to all subscribed, idle cost per handler [%d nc.Subscribe]", n, n),
			unit: "ms_to_subscribed", lower: true, quickN: n, fullN: n, quickRounds: 3, fullRounds: 5, noSample: true,
			raw: rawHandlers(false), corral: corralHandlers(false),
		})
	}
	out = append(out, scenario{
		name: "diag-handlers-floor-1000", about: "diagnostic, not run by default: 1000 subscriptions each made by a goroutine of its own that then waits, one flush: the floor of a goroutine per handler, in Corral's column [1000 nc.Subscribe from one goroutine]",
		unit: "ms_to_subscribed", lower: true, quickN: 1000, fullN: 1000, quickRounds: 3, fullRounds: 5, noSample: true, diagnostic: true,
		raw: rawHandlers(false), corral: goroutinePerSubscription,
	})
	out = append(out, scenario{
		name: "handlers-js-100", about: "100 JetStream handlers on one Client: ms to all consuming, idle cost per handler [100 durable consumers + Consume]",
		unit: "ms_to_subscribed", lower: true, quickN: 100, fullN: 100, quickRounds: 3, fullRounds: 5, noSample: true,
		raw: rawHandlers(true), corral: corralHandlers(true),
	})
	return out
}

// growthMeasure times start, which returns once n handlers are subscribed,
// and takes the idle footprint it added.
func growthMeasure(ctx context.Context, n int, start func() (stop func(), err error)) (sample, error) {
	if err := sleepCtx(ctx, growSettle); err != nil {
		return sample{}, err
	}
	before := snapshot()
	t0 := time.Now()
	stop, err := start()
	if err != nil {
		return sample{}, err
	}
	defer stop()
	took := time.Since(t0)
	if err := sleepCtx(ctx, growSettle); err != nil {
		return sample{}, err
	}
	after := snapshot()
	return sample{value: float64(took) / float64(time.Millisecond), extra: map[string]float64{
		"goroutines_per_handler": float64(after.client-before.client) / float64(n),
		"heap_kib_per_handler":   (float64(after.heap) - float64(before.heap)) / 1024 / float64(n),
	}}, nil
}

func sleepCtx(ctx context.Context, d time.Duration) error {
	select {
	case <-time.After(d):
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func growSubject(i int) string { return fmt.Sprintf("bench.grow.%d", i) }

// growStreamFor makes an empty stream for the JetStream handlers' filters.
func growStreamFor(ctx context.Context, e *env) error {
	nc, err := connect(e)
	if err != nil {
		return err
	}
	defer nc.Close()
	_, err = e.freshStream(ctx, nc, growStream, "bench.grow.>")
	return err
}

func rawHandlers(js bool) runFunc {
	return func(ctx context.Context, e *env, n int) (sample, error) {
		if js {
			if err := growStreamFor(ctx, e); err != nil {
				return sample{}, err
			}
		}
		return growthMeasure(ctx, n, func() (func(), error) {
			nc, err := connect(e)
			if err != nil {
				return nil, err
			}
			if js {
				return rawConsumers(ctx, nc, n)
			}
			for i := range n {
				if _, err := nc.Subscribe(growSubject(i), func(*nats.Msg) {}); err != nil {
					nc.Close()
					return nil, err
				}
			}
			if err := nc.Flush(); err != nil {
				nc.Close()
				return nil, err
			}
			return nc.Close, nil
		})
	}
}

// rawConsumers makes n durable consumers and consumes each, as Corral's
// JetStream handlers do.
func rawConsumers(ctx context.Context, nc *nats.Conn, n int) (func(), error) {
	var ccs []jetstream.ConsumeContext
	stop := func() {
		for _, cc := range ccs {
			cc.Stop()
			<-cc.Closed()
		}
		nc.Close()
	}
	js, err := jetstream.New(nc)
	if err != nil {
		stop()
		return nil, err
	}
	for i := range n {
		cons, err := js.CreateOrUpdateConsumer(ctx, growStream, jetstream.ConsumerConfig{
			Durable: fmt.Sprintf("g%d", i), FilterSubject: growSubject(i), AckPolicy: jetstream.AckExplicitPolicy,
		})
		if err != nil {
			stop()
			return nil, err
		}
		cc, err := cons.Consume(func(m jetstream.Msg) { _ = m.Ack() })
		if err != nil {
			stop()
			return nil, err
		}
		ccs = append(ccs, cc)
	}
	return stop, nil
}

func corralHandlers(js bool) runFunc {
	return func(ctx context.Context, e *env, n int) (sample, error) {
		if js {
			if err := growStreamFor(ctx, e); err != nil {
				return sample{}, err
			}
		}
		return growthMeasure(ctx, n, func() (func(), error) {
			nop := consumer.HandlerFunc(func(context.Context, *consumer.Msg) error { return nil })
			c, err := startCorral(ctx, e, corral.Config{}, func(c *corral.Client) error {
				for i := range n {
					hc := consumer.Config{Subject: growSubject(i)}
					if js {
						hc = consumer.Config{JetStream: consumer.JetStream{Stream: growStream, FilterSubjects: []string{growSubject(i)}}}
					}
					if err := c.Handle(fmt.Sprintf("g%d", i), hc, nop); err != nil {
						return err
					}
				}
				return nil
			})
			if err != nil {
				return nil, err
			}
			if err := c.waitReady(ctx); err != nil {
				_ = c.stop()
				return nil, err
			}
			return func() { _ = c.stop() }, nil
		})
	}
}

// goroutinePerSubscription makes n subscriptions on one connection, each
// from a goroutine of its own that then waits for the stop, as each
// Corral handler's loop subscribes and waits; one flush once all are
// made. It is no handler: it measures what running them side by side
// costs nats.go's connection before any handler's own work.
func goroutinePerSubscription(ctx context.Context, e *env, n int) (sample, error) {
	return growthMeasure(ctx, n, func() (func(), error) {
		nc, err := connect(e)
		if err != nil {
			return nil, err
		}
		stop := make(chan struct{})
		var wg, made sync.WaitGroup
		errs := make([]error, n)
		made.Add(n)
		for i := range n {
			wg.Go(func() {
				sub, err := nc.Subscribe(growSubject(i), func(*nats.Msg) {})
				errs[i] = err
				made.Done()
				if err != nil {
					return
				}
				<-stop
				_ = sub.Unsubscribe()
			})
		}
		end := func() {
			close(stop)
			wg.Wait()
			nc.Close()
		}
		made.Wait()
		if err := errors.Join(errs...); err != nil {
			end()
			return nil, err
		}
		if err := nc.Flush(); err != nil {
			end()
			return nil, err
		}
		return end, nil
	})
}
