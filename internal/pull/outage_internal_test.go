package pull

import (
	"context"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/corral-go/corral/connection"
	"github.com/corral-go/corral/internal/natstest"
)

// A consumer that does not answer its first pull requests, as one just
// declared on a cluster may not, and answers well within a second, is
// pulled from with no failure reported.
func TestConsumerNotYetReachableIsNoFailure(t *testing.T) {
	t.Parallel()
	nc, js, ctx := streamS(t)
	if _, err := js.Publish(ctx, "s", []byte("first")); err != nil {
		t.Fatal(err)
	}
	o := &failures{}
	feed := func(*nats.Subscription) <-chan struct{} { return make(chan struct{}) }
	p := New(Config{Stream: "S", Consumer: "h", Capacity: 5, Source: connection.NewFixed(nc), Feed: feed}, o)
	session, err := p.Open(nc)
	if err != nil {
		t.Fatal(err)
	}
	rctx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- session.Run(rctx, js, nil) }()
	defer func() {
		stop()
		<-done
	}()
	// The consumer is not there for the first requests: it becomes
	// reachable a tenth of a second after the session opened. The wait is
	// the fault itself: a subscriber watching for the first request would
	// answer it, where the server must answer no responders.
	time.Sleep(100 * time.Millisecond)
	if _, err := js.CreateConsumer(ctx, "S", jetstream.ConsumerConfig{Durable: "h", AckPolicy: jetstream.AckExplicitPolicy}); err != nil {
		t.Fatal(err)
	}
	natstest.Eventually(t, 10*time.Second, func() bool { return o.accepted.Load() == 1 }, func() string {
		return "the first message was never pulled"
	})
	if got := o.reported(); len(got) > 0 {
		t.Fatalf("failures reported for a consumer that answered within a second: %v", got)
	}
}
