package pull

import (
	"context"
	"errors"
	"sync/atomic"
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

// With several consumers, an outage is one episode until every consumer
// with a request out has answered since its first failure: a consumer
// led from the lost node fails later than the first, and ending the
// episode before it answered would open a second one for the same loss.
func TestTiersEpisodeWaitsForEveryConsumerAsked(t *testing.T) {
	t.Parallel()
	srv := natstest.RunServer(t)
	nc := connectInternal(t, srv.URL())
	var recovered atomic.Int32
	p := newTestPullerFor(t, nc, Config{Consumers: []string{"h", "h2"}, Recovered: func() { recovered.Add(1) }}, &owner{})
	s, err := p.Open(nc)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Drain(time.Time{})
	first, second := s.lanes[0], s.lanes[1]
	second.in.credits.Store(1) // a doorbell out, unanswered
	s.fail(first, errors.New("no heartbeat"))
	first.in.answered.Store(time.Now().Add(time.Millisecond).UnixNano())
	s.noteAnswers()
	if n := recovered.Load(); n != 0 {
		t.Fatalf("recovered %d times while a consumer asked had not answered since the failure", n)
	}
	second.in.answered.Store(time.Now().Add(2 * time.Millisecond).UnixNano())
	s.noteAnswers()
	s.noteAnswers()
	if n := recovered.Load(); n != 1 {
		t.Fatalf("recovered %d times once every consumer answered, want once", n)
	}
}
