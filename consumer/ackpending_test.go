package consumer_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/corral-go/corral/consumer"
	"github.com/corral-go/corral/internal/natstest"
)

// A consumer whose unacknowledged messages (here, naked ones waiting out
// their backoff) reach max_ack_pending is reported, in an event and in
// Status, and again once it is back below.
func TestJetStreamReportsMaxAckPending(t *testing.T) {
	t.Parallel()
	e := newJSEnv(t, jetstream.StreamConfig{Name: "PEND", Subjects: []string{"pend"}})
	var ok atomic.Bool
	h := consumer.HandlerFunc(func(context.Context, *consumer.Msg) error {
		if ok.Load() {
			return nil
		}
		return errors.New("not yet")
	})
	cfg := consumer.Config{JetStream: consumer.JetStream{Stream: "PEND", MaxAckPending: 10, MaxDeliver: -1,
		Backoff: []time.Duration{2 * time.Second}}}
	if err := e.sup.Handle("pend", cfg, h); err != nil {
		t.Fatal(err)
	}
	e.publishSeq("pend", 20)
	stop := e.serve()
	high, _ := natstest.WaitFor[consumer.AckPendingHigh](t, e.rec, 0, 30*time.Second, nil)
	if high.Handler != "pend" || high.Consumer != "pend" || high.MaxAckPending != 10 || high.AckPending < 9 {
		t.Fatalf("ack pending high: %+v", high)
	}
	if st := e.status("pend"); !st.NearMaxAckPending || st.MaxAckPending != 10 || st.AckPending < 9 {
		t.Fatalf("status: near %v, %d of %d", st.NearMaxAckPending, st.AckPending, st.MaxAckPending)
	}
	ok.Store(true)
	natstest.WaitFor[consumer.AckPendingNormal](t, e.rec, 0, 30*time.Second, nil)
	if st := e.status("pend"); st.NearMaxAckPending {
		t.Fatalf("status: still near, %d of %d", st.AckPending, st.MaxAckPending)
	}
	cleanStop(t, stop)
}

// A pool larger than the server's default max_ack_pending gets a consumer
// whose limit is twice the pool, so that the instance's own pool never
// reaches it: the default queue counts at the most it adapts to (8
// workers + 2048); a small pool leaves the server's default, as does a
// stream whose own limit is lower.
func TestJetStreamMaxAckPendingDefaultCoversThePool(t *testing.T) {
	t.Parallel()
	e := newJSEnv(t, jetstream.StreamConfig{Name: "BIG", Subjects: []string{"big.>"}})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := e.js.CreateStream(ctx, jetstream.StreamConfig{Name: "LIMITED", Subjects: []string{"limited"},
		ConsumerLimits: jetstream.StreamConsumerLimits{MaxAckPending: 800}}); err != nil {
		t.Fatal(err)
	}
	noop := consumer.HandlerFunc(func(context.Context, *consumer.Msg) error { return nil })
	handlers := map[string]consumer.Config{
		"big":     {Subject: "big.a", Workers: 100, QueueSize: 500, JetStream: consumer.JetStream{Stream: "BIG"}},
		"default": {Subject: "big.b", Workers: 8, JetStream: consumer.JetStream{Stream: "BIG"}},
		"small":   {Subject: "big.c", Workers: 8, QueueSize: 64, JetStream: consumer.JetStream{Stream: "BIG"}},
		"limited": {Workers: 100, QueueSize: 500, JetStream: consumer.JetStream{Stream: "LIMITED"}},
	}
	for name, cfg := range handlers {
		if err := e.sup.Handle(name, cfg, noop); err != nil {
			t.Fatal(err)
		}
	}
	stop := e.serve()
	e.subscribed(len(handlers))
	for name, want := range map[string]int{"big": 1200, "default": 2 * (8 + 2048), "small": 1000, "limited": 800} {
		c, err := e.js.Consumer(ctx, handlers[name].Stream, name)
		if err != nil {
			t.Fatal(err)
		}
		if got := c.CachedInfo().Config.MaxAckPending; got != want {
			t.Fatalf("%s: max_ack_pending %d, want %d", name, got, want)
		}
	}
	cleanStop(t, stop)
}
