package main

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/corral-go/corral"
	"github.com/corral-go/corral/consumer"
)

var payload = make([]byte, 128)

// payloadOf is a payload of size bytes (0: the 128-byte payload).
func payloadOf(size int) []byte {
	if size == 0 {
		return payload
	}
	return make([]byte, size)
}

// withBytes adds the rate in MiB/s of a sample measured in messages of
// size bytes.
func withBytes(smp sample, size int) sample {
	if smp.extra == nil {
		smp.extra = map[string]float64{}
	}
	smp.extra["mib_per_s"] = smp.value * float64(size) / (1 << 20)
	return smp
}

// connect is a raw nats.go connection to the bench server, quiet about
// slow consumers (the scenarios count what they receive).
func connect(e *env, opts ...nats.Option) (*nats.Conn, error) {
	opts = append([]nats.Option{nats.Name("bench-raw"), nats.ErrorHandler(func(*nats.Conn, *nats.Subscription, error) {})}, opts...)
	return nats.Connect(strings.Join(e.urls(), ","), opts...)
}

// corralClient is a Corral Client on the bench server, running until
// stop.
type corralClient struct {
	*corral.Client
	cancel context.CancelFunc
	done   chan error
}

// startCorral builds a Client from cfg pointed at the bench server, lets
// declare bind handlers, runs it and waits until it is connected; waitReady
// then waits for its handlers.
func startCorral(ctx context.Context, e *env, cfg corral.Config, declare func(*corral.Client) error) (*corralClient, error) {
	cfg.Connection.Servers = e.urls()
	if cfg.Name == "" {
		cfg.Name = "bench-corral"
	}
	c, err := corral.New(cfg)
	if err != nil {
		return nil, err
	}
	if declare != nil {
		if err := declare(c); err != nil {
			return nil, err
		}
	}
	rctx, cancel := context.WithCancel(context.Background())
	cc := &corralClient{Client: c, cancel: cancel, done: make(chan error, 1)}
	go func() { cc.done <- c.Run(rctx) }()
	if _, err := c.Conn(ctx); err != nil {
		cc.stop()
		return nil, err
	}
	return cc, nil
}

// startCorralOn starts a Client and gives it an empty stream name that
// stores subject, so each round publishes into a stream of its own.
func startCorralOn(ctx context.Context, e *env, cfg corral.Config, name, subject string) (*corralClient, error) {
	c, err := startCorral(ctx, e, cfg, nil)
	if err != nil {
		return nil, err
	}
	nc, err := c.Conn(ctx)
	if err == nil {
		_, err = e.freshStream(ctx, nc, name, subject)
	}
	if err != nil {
		c.stop()
		return nil, err
	}
	return c, nil
}

// waitReady waits until every handler of the Client is ready, as an
// application does: with Client.Ready, which wakes at each change instead
// of polling.
func (c *corralClient) waitReady(ctx context.Context) error {
	return c.Ready(ctx)
}

func (c *corralClient) stop() error {
	c.cancel()
	return <-c.done
}

// handlerStatus is the first handler's status.
func (c *corralClient) handlerStatus() consumer.Status { return c.Status().Handlers[0] }

// waitCount polls until count reaches n or ctx ends.
func waitCount(ctx context.Context, count func() int64, n int) error {
	for count() < int64(n) {
		select {
		case <-ctx.Done():
			return fmt.Errorf("%d of %d: %w", count(), n, ctx.Err())
		case <-time.After(50 * time.Microsecond):
		}
	}
	return nil
}

// freshStream (re)creates a file stream named name on subject and returns a
// JetStream context for it.
func (e *env) freshStream(ctx context.Context, nc *nats.Conn, name string, subjects ...string) (jetstream.JetStream, error) {
	js, err := jetstream.New(nc, jetstream.WithPublishAsyncMaxPending(4000))
	if err != nil {
		return nil, err
	}
	_ = js.DeleteStream(ctx, name)
	if _, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: name, Subjects: subjects, Storage: jetstream.FileStorage,
		Replicas: max(e.replicas, 1)}); err != nil {
		return nil, fmt.Errorf("create stream %s: %w", name, err)
	}
	return js, nil
}

// fillStream creates stream name holding n messages of size bytes (0: the
// 128-byte payload) on subject,
// and a durable pull consumer "bench" on it that every implementation
// shares the configuration of.
func fillStream(ctx context.Context, e *env, name, subject string, size, n int) error {
	nc, err := connect(e)
	if err != nil {
		return err
	}
	defer nc.Close()
	js, err := e.freshStream(ctx, nc, name, subject)
	if err != nil {
		return err
	}
	data := payloadOf(size)
	for range n {
		if _, err := js.PublishAsync(subject, data, jetstream.WithStallWait(time.Minute)); err != nil {
			return err
		}
	}
	select {
	case <-js.PublishAsyncComplete():
	case <-ctx.Done():
		return fmt.Errorf("fill stream: %w", ctx.Err())
	}
	_, err = js.CreateOrUpdateConsumer(ctx, name, jetstream.ConsumerConfig{
		Durable: "bench", AckPolicy: jetstream.AckExplicitPolicy, MaxAckPending: 10000,
	})
	return err
}
