package consumer_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/corral-go/corral/consumer"
	"github.com/corral-go/corral/internal/natstest"
	"github.com/corral-go/corral/supervisor"
)

// A dead-letter subject that no stream stores fails the handler's start,
// naming the handler, the subject and the fix, instead of failing every
// dead letter later.
func TestJetStreamDeadLetterWithoutAStreamIsRefusedAtStart(t *testing.T) {
	t.Parallel()
	e := newJSEnv(t, jetstream.StreamConfig{Name: "SRC", Subjects: []string{"src"}})
	cfg := consumer.Config{JetStream: consumer.JetStream{Stream: "SRC", DeadLetter: "nowhere.src"},
		Restart: supervisor.Policy{Mode: supervisor.Temporary}}
	if err := e.sup.Handle("poison", cfg, consumer.HandlerFunc(func(context.Context, *consumer.Msg) error { return nil })); err != nil {
		t.Fatal(err)
	}
	stop := e.serve()
	ev, _ := natstest.WaitFor[supervisor.ChildStopped](t, e.rec, 0, 10*time.Second, nil)
	msg := ""
	if ev.Err != nil {
		msg = ev.Err.Error()
	}
	for _, want := range []string{`handler "poison"`, `dead_letter "nowhere.src"`, "no stream stores the subject", "streams:"} {
		if !strings.Contains(msg, want) {
			t.Fatalf("got %q, want it to say %s", msg, want)
		}
	}
	if !errors.Is(ev.Err, consumer.ErrInvalidConfig) {
		t.Fatalf("got %v, want ErrInvalidConfig", ev.Err)
	}
	if n := len(natstest.All[consumer.Subscribed](e.rec)); n != 0 {
		t.Fatalf("the handler subscribed %d times", n)
	}
	cleanStop(t, stop)
}

// A handler whose stream the server does not have fails its start with an
// error naming the handler, the stream and the fix, and still matching
// jetstream.ErrStreamNotFound; likewise for a bound consumer.
func TestJetStreamMissingStreamIsAClearError(t *testing.T) {
	t.Parallel()
	for _, bind := range []bool{false, true} {
		e := newJSEnv(t, jetstream.StreamConfig{Name: "OTHER", Subjects: []string{"other"}})
		cfg := consumer.Config{JetStream: consumer.JetStream{Stream: "ORDERS", Bind: bind},
			Restart: supervisor.Policy{Mode: supervisor.Temporary}}
		if err := e.sup.Handle("invoices", cfg, consumer.HandlerFunc(func(context.Context, *consumer.Msg) error { return nil })); err != nil {
			t.Fatal(err)
		}
		stop := e.serve()
		ev, _ := natstest.WaitFor[supervisor.ChildStopped](t, e.rec, 0, 10*time.Second, nil)
		if !errors.Is(ev.Err, jetstream.ErrStreamNotFound) {
			t.Fatalf("bind %v: got %v, want jetstream.ErrStreamNotFound", bind, ev.Err)
		}
		for _, want := range []string{`handler "invoices"`, "stream ORDERS does not exist", "streams:", "create_stream"} {
			if !strings.Contains(ev.Err.Error(), want) {
				t.Fatalf("bind %v: got %q, want it to say %s", bind, ev.Err, want)
			}
		}
		cleanStop(t, stop)
	}
}
