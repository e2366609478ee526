package main

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ThreeDotsLabs/watermill"
	wmjs "github.com/ThreeDotsLabs/watermill-nats/v2/pkg/jetstream"
	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/nats-io/nuid"

	"github.com/corral-go/corral"
	"github.com/corral-go/corral/consumer"
	"github.com/corral-go/corral/publisher"
)

// The consume scenarios fill a stream with n messages and a durable
// consumer (max_ack_pending 10000, the same for everyone), then time from
// the first message handled to the n-th acknowledged: connecting and
// binding are left out for every implementation alike.
//
// Watermill's JetStream subscriber has a stream per topic, named as the
// topic, so the stream, its subject and the topic share one name.
const consumeStream = "BENCHCONSUME"

type jsWork struct {
	// workers is how many handler calls run at once: Corral's workers,
	// the raw baseline's Consume calls on the consumer (nats.go runs each
	// callback one message at a time; the js-parallel-consume example
	// is how it parallelises), Watermill's subscriptions.
	workers int
	do      func()
	// queue is Corral's queue_size; 0 leaves its default.
	queue int
	size  int // payload bytes; 0: 128
}

// firstLast records when the first message was handled and counts them.
type firstLast struct {
	first   atomic.Int64
	handled atomic.Int64
}

func (f *firstLast) hit() {
	if f.first.Load() == 0 {
		f.first.CompareAndSwap(0, time.Now().UnixNano())
	}
	f.handled.Add(1)
}

func (f *firstLast) rate(n int) float64 {
	return float64(n) / time.Since(time.Unix(0, f.first.Load())).Seconds()
}

func rawConsume(w jsWork) runFunc {
	return func(ctx context.Context, e *env, n int) (sample, error) {
		if err := fillStream(ctx, e, consumeStream, consumeStream, w.size, n); err != nil {
			return sample{}, err
		}
		e.startClock()
		nc, err := connect(e)
		if err != nil {
			return sample{}, err
		}
		defer nc.Close()
		js, err := jetstream.New(nc)
		if err != nil {
			return sample{}, err
		}
		cons, err := js.Consumer(ctx, consumeStream, "bench")
		if err != nil {
			return sample{}, err
		}
		var fl firstLast
		for range w.workers {
			cc, err := cons.Consume(func(m jetstream.Msg) {
				w.do()
				_ = m.Ack()
				fl.hit()
			}, jetstream.ConsumeErrHandler(func(jetstream.ConsumeContext, error) {}))
			if err != nil {
				return sample{}, err
			}
			defer func() { cc.Stop(); <-cc.Closed() }()
		}
		if err := waitCount(ctx, fl.handled.Load, n); err != nil {
			return sample{}, err
		}
		e.stopClock()
		return withBytes(sample{value: fl.rate(n), msgs: n}, len(payloadOf(w.size))), nil
	}
}

func corralConsume(w jsWork) runFunc {
	return func(ctx context.Context, e *env, n int) (sample, error) {
		if err := fillStream(ctx, e, consumeStream, consumeStream, w.size, n); err != nil {
			return sample{}, err
		}
		e.startClock()
		var fl firstLast
		c, err := startCorral(ctx, e, corral.Config{}, func(c *corral.Client) error {
			hc := consumer.Config{Workers: w.workers, QueueSize: w.queue,
				JetStream: consumer.JetStream{Stream: consumeStream, Consumer: "bench", Bind: true}}
			return c.Handle("bench", hc, consumer.HandlerFunc(func(context.Context, *consumer.Msg) error {
				w.do()
				fl.hit()
				return nil
			}))
		})
		if err != nil {
			return sample{}, err
		}
		defer c.stop()
		acked := func() int64 { return int64(c.handlerStatus().Counters.Acked) }
		if err := waitCount(ctx, fl.handled.Load, n); err != nil {
			return sample{}, err
		}
		if err := waitCount(ctx, acked, n); err != nil {
			return sample{}, err
		}
		e.stopClock()
		return withBytes(sample{value: fl.rate(n), msgs: n}, len(payloadOf(w.size))), nil
	}
}

// watermillConsume uses watermill-nats' JetStream subscriber configured for
// throughput: no logging, asynchronous acks (the default is a DoubleAck
// per message), and w.workers subscriptions on the shared durable
// consumer, each handled by its own goroutine (a subscription hands over
// one message at a time, waiting for its ack).
func watermillConsume(w jsWork) runFunc { return watermillSubscriber(w, true) }

// watermillSubscriber runs w.workers subscriptions; ackAsync false is
// Watermill's default (a DoubleAck per message), for the diagnostic.
func watermillSubscriber(w jsWork, ackAsync bool) runFunc {
	return func(ctx context.Context, e *env, n int) (sample, error) {
		if err := fillStream(ctx, e, consumeStream, consumeStream, w.size, n); err != nil {
			return sample{}, err
		}
		e.startClock()
		nc, err := connect(e)
		if err != nil {
			return sample{}, err
		}
		defer nc.Close()
		sub, err := wmjs.NewSubscriber(wmjs.SubscriberConfig{
			Conn:     nc,
			Logger:   watermill.NopLogger{},
			AckAsync: ackAsync,
			ResourceInitializer: wmjs.ExistingConsumer(func(string, string) jetstream.ConsumerConfig {
				return jetstream.ConsumerConfig{Name: "bench"}
			}, ""),
		})
		if err != nil {
			return sample{}, err
		}
		defer sub.Close()
		sctx, cancel := context.WithCancel(ctx)
		defer cancel()
		var fl firstLast
		var wg sync.WaitGroup
		defer wg.Wait()
		defer cancel()
		for range w.workers {
			msgs, err := sub.Subscribe(sctx, consumeStream)
			if err != nil {
				return sample{}, err
			}
			wg.Go(func() {
				for m := range msgs {
					w.do()
					m.Ack()
					fl.hit()
				}
			})
		}
		if err := waitCount(ctx, fl.handled.Load, n); err != nil {
			return sample{}, err
		}
		e.stopClock()
		return withBytes(sample{value: fl.rate(n), msgs: n}, len(payloadOf(w.size))), nil
	}
}

// The publish scenarios time n messages to a fresh file stream until the
// last is acknowledged.
const (
	pubStream  = "BENCHPUB"
	pubSubject = "BENCHPUB"
)

// rawPublishAsync publishes with PublishAsync, with a Nats-Msg-Id per
// message or none.
func rawPublishAsync(withMsgID bool) runFunc {
	return func(ctx context.Context, e *env, n int) (sample, error) {
		nc, js, err := rawPublisher(ctx, e)
		if err != nil {
			return sample{}, err
		}
		defer nc.Close()
		e.startClock()
		start := time.Now()
		for range n {
			// A full window waits for room, as Corral's publisher does
			// (on_full: block), instead of failing after 200ms.
			opts := append(msgIDOpts(withMsgID), jetstream.WithStallWait(time.Minute))
			if _, err := js.PublishAsync(pubSubject, payload, opts...); err != nil {
				return sample{}, err
			}
		}
		select {
		case <-js.PublishAsyncComplete():
		case <-ctx.Done():
			return sample{}, ctx.Err()
		}
		e.stopClock()
		return sample{value: float64(n) / time.Since(start).Seconds(), msgs: n}, nil
	}
}

// rawPublisher is a raw connection and the empty publishing stream.
func rawPublisher(ctx context.Context, e *env) (*nats.Conn, jetstream.JetStream, error) {
	nc, err := connect(e)
	if err != nil {
		return nil, nil, err
	}
	js, err := e.freshStream(ctx, nc, pubStream, pubSubject)
	if err != nil {
		nc.Close()
		return nil, nil, err
	}
	return nc, js, nil
}

// msgIDOpts is a fresh Nats-Msg-Id, or nothing.
func msgIDOpts(withMsgID bool) []jetstream.PublishOpt {
	if !withMsgID {
		return nil
	}
	return []jetstream.PublishOpt{jetstream.WithMsgID(nuid.Next())}
}

// corralPublishConfig is the buffered publisher's defaults but for the
// full-buffer policy: block (backpressure) instead of failing; noMsgID
// sends no generated Msg-Id.
func corralPublishConfig(noMsgID bool) corral.Config {
	return corral.Config{Publisher: publisher.Config{OnFull: publisher.Block, NoMsgID: noMsgID}}
}

func corralPublish(noMsgID bool) runFunc {
	return func(ctx context.Context, e *env, n int) (sample, error) {
		c, err := startCorralOn(ctx, e, corralPublishConfig(noMsgID), pubStream, pubSubject)
		if err != nil {
			return sample{}, err
		}
		defer c.stop()
		base := c.Publisher().Status().Acked
		e.startClock()
		start := time.Now()
		var last *publisher.Future
		for range n {
			if last, err = c.Publish(ctx, pubSubject, payload); err != nil {
				return sample{}, err
			}
		}
		if _, err := last.Wait(ctx); err != nil {
			return sample{}, err
		}
		acked := func() int64 { return int64(c.Publisher().Status().Acked - base) }
		if err := waitCount(ctx, acked, n); err != nil {
			return sample{}, err
		}
		e.stopClock()
		return sample{value: float64(n) / time.Since(start).Seconds(), msgs: n}, nil
	}
}

// watermillPublishers is how many goroutines publish at once through
// Watermill, whose JetStream publisher waits for each ack: the
// watermill-benchmark's setting.
const watermillPublishers = 64

func watermillPublisher(ctx context.Context, e *env) (*wmjs.Publisher, func(), error) {
	nc, err := connect(e)
	if err != nil {
		return nil, nil, err
	}
	if _, err := e.freshStream(ctx, nc, pubStream, pubSubject); err != nil {
		nc.Close()
		return nil, nil, err
	}
	pub, err := wmjs.NewPublisher(wmjs.PublisherConfig{Conn: nc, Logger: watermill.NopLogger{}})
	if err != nil {
		nc.Close()
		return nil, nil, err
	}
	return pub, func() { _ = pub.Close() }, nil
}

func watermillPublish(ctx context.Context, e *env, n int) (sample, error) {
	pub, closePub, err := watermillPublisher(ctx, e)
	if err != nil {
		return sample{}, err
	}
	defer closePub()
	var next atomic.Int64
	errs := make(chan error, watermillPublishers)
	var wg sync.WaitGroup
	e.startClock()
	start := time.Now()
	for range watermillPublishers {
		wg.Go(func() {
			for next.Add(1) <= int64(n) {
				if ctx.Err() != nil {
					errs <- ctx.Err()
					return
				}
				if err := pub.Publish(pubSubject, message.NewMessage(watermill.NewUUID(), payload)); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	elapsed := time.Since(start)
	e.stopClock()
	select {
	case err := <-errs:
		return sample{}, err
	default:
	}
	return sample{value: float64(n) / elapsed.Seconds(), msgs: n}, nil
}

// Synchronous publish: one caller, each message waits for its ack.
func syncLoop(ctx context.Context, e *env, n int, publish func() error) (sample, error) {
	lat := make([]time.Duration, 0, n)
	e.startClock()
	start := time.Now()
	for range n {
		if ctx.Err() != nil {
			return sample{}, ctx.Err()
		}
		t := time.Now()
		if err := publish(); err != nil {
			return sample{}, err
		}
		lat = append(lat, time.Since(t))
	}
	e.stopClock()
	return sample{value: float64(n) / time.Since(start).Seconds(), msgs: n, lat: lat}, nil
}

// rawPublishSync publishes with js.Publish, with a Nats-Msg-Id per
// message or none.
func rawPublishSync(withMsgID bool) runFunc {
	return func(ctx context.Context, e *env, n int) (sample, error) {
		nc, js, err := rawPublisher(ctx, e)
		if err != nil {
			return sample{}, err
		}
		defer nc.Close()
		return syncLoop(ctx, e, n, func() error {
			_, err := js.Publish(ctx, pubSubject, payload, msgIDOpts(withMsgID)...)
			return err
		})
	}
}

func corralPublishSync(noMsgID bool) runFunc {
	return func(ctx context.Context, e *env, n int) (sample, error) {
		c, err := startCorralOn(ctx, e, corralPublishConfig(noMsgID), pubStream, pubSubject)
		if err != nil {
			return sample{}, err
		}
		defer c.stop()
		return syncLoop(ctx, e, n, func() error {
			_, err := c.PublishSync(ctx, pubSubject, payload)
			return err
		})
	}
}

func watermillPublishSync(ctx context.Context, e *env, n int) (sample, error) {
	pub, closePub, err := watermillPublisher(ctx, e)
	if err != nil {
		return sample{}, err
	}
	defer closePub()
	return syncLoop(ctx, e, n, func() error {
		return pub.Publish(pubSubject, message.NewMessage(watermill.NewUUID(), payload))
	})
}
