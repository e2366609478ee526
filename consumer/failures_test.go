package consumer_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/corral-go/corral/consumer"
	"github.com/corral-go/corral/internal/natstest"
)

// A handler's errors are reported without any middleware, at most once a
// second, each event counting the failures it stands for, with what
// identifies the message and never its data.
func TestHandlerFailuresAreReported(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	failing := consumer.HandlerFunc(func(context.Context, *consumer.Msg) error { return errors.New("order rejected") })
	if err := e.sup.Handle("orders", consumer.Config{Subject: "orders", Workers: 4, QueueSize: 500}, failing); err != nil {
		t.Fatal(err)
	}
	off := false
	if err := e.sup.Handle("quiet", consumer.Config{Subject: "quiet", LogFailures: &off}, failing); err != nil {
		t.Fatal(err)
	}
	stop := e.serve()
	e.subscribed(2)
	began := time.Now()
	e.publish("orders", 200, []byte("secret payload"))
	e.publish("quiet", 5, []byte("x"))
	eventually(t, "all failed", func() bool {
		return e.status("orders").Counters.Failed == 200 && e.status("quiet").Counters.Failed == 5
	})
	cleanStop(t, stop)
	events := natstest.All[consumer.HandlerFailed](e.rec)
	if limit := 1 + int(time.Since(began)/time.Second); len(events) == 0 || len(events) > limit {
		t.Fatalf("got %d failure events in %v, want between 1 and %d", len(events), time.Since(began), limit)
	}
	var reported uint64
	for _, ev := range events {
		if ev.Handler != "orders" {
			t.Fatalf("an event for handler %q, whose log_failures is false", ev.Handler)
		}
		reported += 1 + ev.Suppressed
	}
	if reported > 200 {
		t.Fatalf("events stand for %d failures, more than the 200 there were", reported)
	}
	if ev := events[0]; ev.Subject != "orders" || ev.Err == nil || ev.Err.Error() != "order rejected" || ev.Stream != "" {
		t.Fatalf("failure event: got %+v", ev)
	}
}

// A JetStream handler's failure names the message's stream, consumer,
// stream sequence and delivery count.
func TestJetStreamHandlerFailureNamesTheMessage(t *testing.T) {
	t.Parallel()
	e := newJSEnv(t, jetstream.StreamConfig{Name: "FAILS", Subjects: []string{"fails"}})
	h := consumer.HandlerFunc(func(context.Context, *consumer.Msg) error { return errors.New("not yet") })
	cfg := consumer.Config{JetStream: consumer.JetStream{Stream: "FAILS", Consumer: "fails", MaxDeliver: 1}}
	if err := e.sup.Handle("fails", cfg, h); err != nil {
		t.Fatal(err)
	}
	e.publishSeq("fails", 1)
	stop := e.serve()
	ev, _ := natstest.WaitFor[consumer.HandlerFailed](t, e.rec, 0, 20*time.Second, nil)
	cleanStop(t, stop)
	if ev.Handler != "fails" || ev.Subject != "fails" || ev.Stream != "FAILS" || ev.Consumer != "fails" ||
		ev.Sequence != 1 || ev.Deliveries != 1 || ev.Err == nil || ev.Suppressed != 0 {
		t.Fatalf("failure event: got %+v", ev)
	}
}
