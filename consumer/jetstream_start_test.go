package consumer_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/corral-go/corral/connection"
	"github.com/corral-go/corral/consumer"
	"github.com/corral-go/corral/internal/natstest"
	"github.com/corral-go/corral/stream"
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
	if !errors.Is(ev.Err, supervisor.ErrInvalidConfig) {
		t.Fatalf("got %v, want supervisor.ErrInvalidConfig", ev.Err)
	}
	if n := len(natstest.All[consumer.Subscribed](e.rec)); n != 0 {
		t.Fatalf("the handler subscribed %d times", n)
	}
	cleanStop(t, stop)
}

// A handler given the declaration of its dead-letter stream declares it
// before it starts, as it does its own stream: it waits on nothing else
// to declare it, and its first dead letter is stored.
func TestJetStreamDeclaresItsDeadLetterStream(t *testing.T) {
	t.Parallel()
	e := newJSEnv(t, jetstream.StreamConfig{Name: "SRC", Subjects: []string{"src"}})
	cfg := consumer.Config{Restart: supervisor.Policy{Mode: supervisor.Temporary}, JetStream: consumer.JetStream{
		Stream: "SRC", DeadLetter: "dlq.src",
		DeadLetterStream: "DLQ", CreateDeadLetterStream: &stream.Config{Subjects: []string{"dlq.>"}}}}
	if err := e.sup.Handle("poison", cfg, consumer.HandlerFunc(func(context.Context, *consumer.Msg) error {
		return consumer.Terminal(errors.New("malformed"))
	})); err != nil {
		t.Fatal(err)
	}
	e.serve()
	e.subscribed(1)
	e.publishSeq("src", 1)
	natstest.WaitFor[consumer.DeadLettered](t, e.rec, 0, 10*time.Second, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	s, err := e.js.Stream(ctx, "DLQ")
	if err != nil {
		t.Fatal(err)
	}
	if n := s.CachedInfo().State.Msgs; n != 1 {
		t.Fatalf("the dead-letter stream holds %d messages, want 1", n)
	}
	if failed := natstest.All[supervisor.ChildFailed](e.rec); len(failed) > 0 {
		t.Fatalf("the handler failed: %+v", failed)
	}
}

// A dead-letter stream declaration must store the dead-letter subject.
func TestJetStreamDeadLetterStreamMustStoreTheSubject(t *testing.T) {
	t.Parallel()
	cfg := consumer.Config{JetStream: consumer.JetStream{Stream: "SRC", DeadLetter: "dlq.src",
		DeadLetterStream: "DLQ", CreateDeadLetterStream: &stream.Config{Subjects: []string{"other.>"}}}}
	err := cfg.Validate()
	if !errors.Is(err, supervisor.ErrInvalidConfig) || !strings.Contains(err.Error(), `does not store dead_letter "dlq.src"`) {
		t.Fatalf("Validate: %v", err)
	}
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
			if bind && want == "create_stream" {
				want = "create it and the consumer" // a bound handler may not declare its stream
			}
			if !strings.Contains(ev.Err.Error(), want) {
				t.Fatalf("bind %v: got %q, want it to say %s", bind, ev.Err, want)
			}
		}
		cleanStop(t, stop)
	}
}

// A handler whose stream is missing fails at every restart, but reports
// it once: over many restarts, one error line names the stream and one
// info line the first restart, and nothing else is logged above debug;
// the episode ends when the stream appears and the handler starts.
func TestJetStreamMissingStreamIsReportedOncePerEpisode(t *testing.T) {
	t.Parallel()
	e := newJSEnv(t, jetstream.StreamConfig{Name: "OTHER", Subjects: []string{"other"}})
	core, logs := observer.New(zapcore.DebugLevel)
	g := consumer.NewGroup(connection.NewFixed(e.sub), supervisor.Events{Logger: zap.New(core), Hook: e.rec.Hook})
	e.sup = g
	fast := supervisor.Policy{RestartDelay: time.Millisecond, Backoff: 10 * time.Millisecond, FailureThreshold: 1000}
	cfg := consumer.Config{JetStream: consumer.JetStream{Stream: "LATE"}, Restart: fast}
	if err := g.Handle("late", cfg, consumer.HandlerFunc(func(context.Context, *consumer.Msg) error { return nil })); err != nil {
		t.Fatal(err)
	}
	stop := e.serve()
	const restarts = 8
	natstest.Eventually(t, 20*time.Second, func() bool { return len(natstest.All[supervisor.ChildFailed](e.rec)) >= restarts },
		func() string { return fmt.Sprintf("%d failures", len(natstest.All[supervisor.ChildFailed](e.rec))) })
	var loud []string
	for _, l := range logs.All() {
		if l.Level >= zapcore.InfoLevel {
			loud = append(loud, l.Level.String()+" "+l.Message)
		}
		if l.Level == zapcore.ErrorLevel && !strings.Contains(fmt.Sprint(l.ContextMap()), "stream LATE does not exist") {
			t.Errorf("%s: %v, want the missing stream named", l.Message, l.ContextMap())
		}
	}
	if want := []string{"error supervisor.child_failed", "info supervisor.child_started"}; fmt.Sprint(loud) != fmt.Sprint(want) {
		t.Fatalf("over %d failures, logged above debug: %q, want %q", restarts, loud, want)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := e.js.CreateStream(ctx, jetstream.StreamConfig{Name: "LATE", Subjects: []string{"late"}}); err != nil {
		t.Fatal(err)
	}
	rec, _ := natstest.WaitFor[supervisor.ChildRecovered](t, e.rec, 0, 20*time.Second, nil)
	if rec.Failures < restarts {
		t.Fatalf("recovered after %d failures, want %d or more", rec.Failures, restarts)
	}
	cleanStop(t, stop)
}
