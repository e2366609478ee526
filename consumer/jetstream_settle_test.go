package consumer_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/corral-go/corral/consumer"
	"github.com/corral-go/corral/internal/natstest"
	"github.com/corral-go/corral/supervisor"
)

func TestJetStreamNakBackoffFollowsSchedule(t *testing.T) {
	t.Parallel()
	e := newJSEnv(t, jetstream.StreamConfig{Name: "RETRY", Subjects: []string{"retry"}})
	var mu sync.Mutex
	var at []time.Time
	h := consumer.HandlerFunc(func(ctx context.Context, m *consumer.Msg) error {
		mu.Lock()
		at = append(at, time.Now())
		mu.Unlock()
		return errors.New("not yet")
	})
	backoff := []time.Duration{200 * time.Millisecond, 400 * time.Millisecond, 800 * time.Millisecond}
	cfg := consumer.Config{JetStream: consumer.JetStream{Stream: "RETRY", MaxDeliver: 4, Backoff: backoff, AckWait: 10 * time.Second}}
	if err := e.sup.Handle("retry", cfg, h); err != nil {
		t.Fatal(err)
	}
	e.publishSeq("retry", 1)
	stop := e.serve()
	eventually(t, "four deliveries", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(at) == 4
	})
	cleanStop(t, stop)
	mu.Lock()
	defer mu.Unlock()
	for i, want := range backoff {
		gap := at[i+1].Sub(at[i])
		// Not before the delay; well before the 10s ack wait.
		if gap < want || gap > want+2*time.Second {
			t.Fatalf("delivery %d came %v after the previous, want %v (delays %v)", i+2, gap, want, backoff)
		}
	}
	if c := e.status("retry").Counters; c.Naked != 4 || c.Redelivered != 3 || c.Acked != 0 {
		t.Fatalf("counters: %+v", c)
	}
}

func TestJetStreamDeadLetters(t *testing.T) {
	t.Parallel()
	e := newJSEnv(t, jetstream.StreamConfig{Name: "WORK", Subjects: []string{"work.>"}})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := e.js.CreateStream(ctx, jetstream.StreamConfig{Name: "DLQ", Subjects: []string{"dlq.>"}}); err != nil {
		t.Fatal(err)
	}
	fail := consumer.HandlerFunc(func(ctx context.Context, m *consumer.Msg) error {
		return fmt.Errorf("cannot process %s", m.Data())
	})
	cfg := consumer.Config{Subject: "work.stored", JetStream: consumer.JetStream{Stream: "WORK", MaxDeliver: 3,
		Backoff: []time.Duration{10 * time.Millisecond}, DeadLetter: "dlq.work"}}
	if err := e.sup.Handle("stored", cfg, fail); err != nil {
		t.Fatal(err)
	}
	// Its dead-letter stream is deleted once it has started: the copy
	// cannot be stored, so the message is not terminated, and is tried
	// again.
	later := consumer.Config{Subject: "work.later", JetStream: consumer.JetStream{Stream: "WORK", MaxDeliver: 2,
		Backoff: []time.Duration{10 * time.Millisecond}, DeadLetter: "later.work"}}
	if err := e.sup.Handle("later", later, fail); err != nil {
		t.Fatal(err)
	}
	laterStream := jetstream.StreamConfig{Name: "LATER", Subjects: []string{"later.>"}}
	if _, err := e.js.CreateStream(ctx, laterStream); err != nil {
		t.Fatal(err)
	}
	if _, err := e.js.Publish(ctx, "work.stored", []byte("m1"), jetstream.WithMsgID("id-1"),
		jetstream.WithExpectLastSequence(0)); err != nil {
		t.Fatal(err)
	}
	stop := e.serve()
	e.subscribed(2)
	if err := e.js.DeleteStream(ctx, "LATER"); err != nil {
		t.Fatal(err)
	}
	if _, err := e.js.Publish(ctx, "work.later", []byte("m2")); err != nil {
		t.Fatal(err)
	}

	ev, _ := natstest.WaitFor[consumer.DeadLettered](t, e.rec, 0, 20*time.Second, nil)
	if ev.Sequence != 1 || ev.Deliveries != 3 || ev.DeadLetter != "dlq.work" {
		t.Fatalf("dead-lettered event: %+v", ev)
	}
	dlq, err := e.js.Stream(ctx, "DLQ")
	if err != nil {
		t.Fatal(err)
	}
	stored, err := dlq.GetMsg(ctx, 1)
	if err != nil {
		t.Fatal(err)
	}
	hdr := stored.Header
	if string(stored.Data) != "m1" || hdr.Get(consumer.DeadLetterStreamHeader) != "WORK" ||
		hdr.Get(consumer.DeadLetterSequenceHeader) != "1" || hdr.Get(consumer.DeadLetterDeliveriesHeader) != "3" ||
		hdr.Get(consumer.DeadLetterSubjectHeader) != "work.stored" || hdr.Get(consumer.DeadLetterErrorHeader) != "cannot process m1" ||
		hdr.Get(jetstream.MsgIDHeader) == "id-1" || hdr.Get(jetstream.ExpectedLastSeqHeader) != "" {
		t.Fatalf("dead letter: %q %v", stored.Data, hdr)
	}

	var from int
	for n := range 2 {
		failed, i := natstest.WaitFor[consumer.DeadLetterFailed](t, e.rec, from, 20*time.Second, nil)
		// One error for the outage, not one per delivery.
		if want := []supervisor.Level{supervisor.ErrorLevel, supervisor.DebugLevel}[n]; failed.Level() != want {
			t.Fatalf("dead-letter failure %d logged at %v, want %v", n+1, failed.Level(), want)
		}
		// In words as clear as the publisher's, not nats.go's "no
		// response from stream".
		if failed.PublishErr == nil || failed.Subject != "work.later" ||
			!strings.Contains(failed.PublishErr.Error(), "no stream answered for later.work (none stores it") {
			t.Fatalf("dead-letter failure: %+v", failed)
		}
		from = i + 1
	}
	if c := e.status("later").Counters; c.Terminated != 0 || c.DeadLettered != 0 {
		t.Fatalf("a message whose copy failed was settled: %+v", c)
	}
	// Once the dead-letter stream exists, the next try stores the copy.
	if _, err := e.js.CreateStream(ctx, laterStream); err != nil {
		t.Fatal(err)
	}
	natstest.WaitFor[consumer.DeadLettered](t, e.rec, 0, 20*time.Second, func(ev consumer.DeadLettered) bool {
		return ev.Subject == "work.later"
	})
	cleanStop(t, stop)
	if c := e.status("stored").Counters; c.DeadLettered != 1 || c.Naked != 2 {
		t.Fatalf("stored counters: %+v", c)
	}
	if c := e.status("later").Counters; c.DeadLettered != 1 || c.DeadLetterFailed < 2 {
		t.Fatalf("later counters: %+v", c)
	}
}

func TestJetStreamReportsMaxDeliveries(t *testing.T) {
	t.Parallel()
	e := newJSEnv(t, jetstream.StreamConfig{Name: "MAX", Subjects: []string{"max"}})
	fail := consumer.HandlerFunc(func(ctx context.Context, m *consumer.Msg) error { return errors.New("no") })
	cfg := consumer.Config{JetStream: consumer.JetStream{Stream: "MAX", MaxDeliver: 2, Backoff: []time.Duration{10 * time.Millisecond}}}
	if err := e.sup.Handle("max", cfg, fail); err != nil {
		t.Fatal(err)
	}
	e.publishSeq("max", 1)
	stop := e.serve()
	ev, _ := natstest.WaitFor[consumer.MaxDeliveries](t, e.rec, 0, 20*time.Second, nil)
	if ev.Sequence != 1 || ev.Deliveries != 2 || ev.Consumer != "max" {
		t.Fatalf("max deliveries: %+v", ev)
	}
	cleanStop(t, stop)
}

func TestJetStreamTerminalErrors(t *testing.T) {
	t.Parallel()
	e := newJSEnv(t, jetstream.StreamConfig{Name: "TERM", Subjects: []string{"term"}})
	h := consumer.HandlerFunc(func(ctx context.Context, m *consumer.Msg) error {
		return consumer.Terminal(errors.New("malformed"))
	})
	if err := e.sup.Handle("term", consumer.Config{JetStream: consumer.JetStream{Stream: "TERM"}}, h); err != nil {
		t.Fatal(err)
	}
	e.publishSeq("term", 3)
	stop := e.serve()
	eventually(t, "terminated", func() bool { return e.status("term").Counters.Terminated == 3 })
	cleanStop(t, stop)
	if c := e.status("term").Counters; c.Naked != 0 || c.Redelivered != 0 {
		t.Fatalf("counters: %+v", c)
	}
}

// reasonless is an error type whose Error needs a non-nil receiver; a
// typed nil of it is a non-nil error.
type reasonless struct{ reason string }

func TestJetStreamTerminalErrorWithoutCause(t *testing.T) {
	t.Parallel()
	e := newJSEnv(t, jetstream.StreamConfig{Name: "TNIL", Subjects: []string{"tnil"}})
	h := consumer.HandlerFunc(func(ctx context.Context, m *consumer.Msg) error {
		if string(m.Data()) == "0" {
			return &consumer.TerminalError{}
		}
		return &consumer.TerminalError{Err: (*reasonless)(nil)}
	})
	if err := e.sup.Handle("tnil", consumer.Config{JetStream: consumer.JetStream{Stream: "TNIL"}}, h); err != nil {
		t.Fatal(err)
	}
	e.publishSeq("tnil", 2)
	stop := e.serve()
	eventually(t, "terminated", func() bool { return e.status("tnil").Counters.Terminated == 2 })
	cleanStop(t, stop)
	if c := e.status("tnil").Counters; c.Naked != 0 || c.Panicked != 0 {
		t.Fatalf("counters: %+v", c)
	}
	if got := (&consumer.TerminalError{}).Error(); got != "terminal" {
		t.Fatalf("Error: got %q, want %q", got, "terminal")
	}
}

func TestJetStreamDeadLettersAnErrorWhoseTextPanics(t *testing.T) {
	t.Parallel()
	e := newJSEnv(t, jetstream.StreamConfig{Name: "DLNIL", Subjects: []string{"dlnil"}})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := e.js.CreateStream(ctx, jetstream.StreamConfig{Name: "DLNILDLQ", Subjects: []string{"dlq.dlnil"}}); err != nil {
		t.Fatal(err)
	}
	h := consumer.HandlerFunc(func(ctx context.Context, m *consumer.Msg) error {
		return (*reasonless)(nil)
	})
	cfg := consumer.Config{JetStream: consumer.JetStream{Stream: "DLNIL", MaxDeliver: 1, DeadLetter: "dlq.dlnil"}}
	if err := e.sup.Handle("dlnil", cfg, h); err != nil {
		t.Fatal(err)
	}
	e.publishSeq("dlnil", 1)
	stop := e.serve()
	eventually(t, "dead-lettered", func() bool { return e.status("dlnil").Counters.DeadLettered == 1 })
	cleanStop(t, stop)
	dlq, err := e.js.Stream(ctx, "DLNILDLQ")
	if err != nil {
		t.Fatal(err)
	}
	stored, err := dlq.GetMsg(ctx, 1)
	if err != nil {
		t.Fatal(err)
	}
	if reason := stored.Header.Get(consumer.DeadLetterErrorHeader); !strings.Contains(reason, "reasonless") {
		t.Fatalf("dead-letter reason: got %q, want the error's type named", reason)
	}
}

func TestJetStreamRecoversAPanicWhileSettling(t *testing.T) {
	t.Parallel()
	e := newJSEnv(t, jetstream.StreamConfig{Name: "SETTLEPANIC", Subjects: []string{"settlepanic"}})
	h := consumer.HandlerFunc(func(ctx context.Context, m *consumer.Msg) error {
		return (*unmatchable)(nil)
	})
	// One delivery: the server does not redeliver what is naked.
	cfg := consumer.Config{JetStream: consumer.JetStream{Stream: "SETTLEPANIC", MaxDeliver: 1}}
	if err := e.sup.Handle("settlepanic", cfg, h); err != nil {
		t.Fatal(err)
	}
	e.publishSeq("settlepanic", 1)
	stop := e.serve()
	ev, _ := natstest.WaitFor[consumer.HandlerPanicked](t, e.rec, 0, 20*time.Second, nil)
	eventually(t, "naked", func() bool { return e.status("settlepanic").Counters.Naked == 1 })
	cleanStop(t, stop)
	if c := e.status("settlepanic").Counters; c.Panicked != 1 || c.Failed != 1 || c.Acked+c.Terminated != 0 {
		t.Fatalf("counters: %+v", c)
	}
	if ev.Err == nil || len(ev.Err.Stack) == 0 {
		t.Fatalf("panic event: got %+v, want a PanicError with its stack", ev)
	}
}

// A message the handler declares terminal goes to the dead-letter subject
// at once, on its first delivery, and is then terminated.
func TestJetStreamTerminalIsDeadLettered(t *testing.T) {
	t.Parallel()
	e := newJSEnv(t, jetstream.StreamConfig{Name: "WORK", Subjects: []string{"work.>"}})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := e.js.CreateStream(ctx, jetstream.StreamConfig{Name: "DLQ", Subjects: []string{"dlq.>"}}); err != nil {
		t.Fatal(err)
	}
	poison := consumer.HandlerFunc(func(context.Context, *consumer.Msg) error {
		return consumer.Terminal(errors.New("cannot be decoded"))
	})
	cfg := consumer.Config{Subject: "work.poison", JetStream: consumer.JetStream{Stream: "WORK", MaxDeliver: 5, DeadLetter: "dlq.poison"}}
	if err := e.sup.Handle("poison", cfg, poison); err != nil {
		t.Fatal(err)
	}
	stop := e.serve()
	e.subscribed(1)
	if _, err := e.js.Publish(ctx, "work.poison", []byte("m1")); err != nil {
		t.Fatal(err)
	}
	ev, _ := natstest.WaitFor[consumer.DeadLettered](t, e.rec, 0, 20*time.Second, nil)
	if ev.Deliveries != 1 || ev.DeadLetter != "dlq.poison" {
		t.Fatalf("dead-lettered: %+v, want on its first delivery, to dlq.poison", ev)
	}
	dlq, err := e.js.Stream(ctx, "DLQ")
	if err != nil {
		t.Fatal(err)
	}
	stored, err := dlq.GetMsg(ctx, 1)
	if err != nil {
		t.Fatal(err)
	}
	if string(stored.Data) != "m1" || stored.Header.Get(consumer.DeadLetterErrorHeader) != "cannot be decoded" {
		t.Fatalf("dead letter: %q %v", stored.Data, stored.Header)
	}
	cleanStop(t, stop)
	if c := e.status("poison").Counters; c.DeadLettered != 1 || c.Naked != 0 {
		t.Fatalf("counters: %+v", c)
	}
}

// A terminal message whose dead-letter copy cannot be stored is not run
// again: its redeliveries only try the copy, until it is stored.
func TestJetStreamTerminalRunsOnceWhileItsDeadLetterFails(t *testing.T) {
	t.Parallel()
	e := newJSEnv(t, jetstream.StreamConfig{Name: "WORK", Subjects: []string{"work.>"}})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	// Full: it takes no copy until purged.
	dlq, err := e.js.CreateStream(ctx, jetstream.StreamConfig{Name: "DLQ", Subjects: []string{"dlq.>"}, MaxMsgs: 1, Discard: jetstream.DiscardNew})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.js.Publish(ctx, "dlq.filler", nil); err != nil {
		t.Fatal(err)
	}
	var runs atomic.Int64
	poison := consumer.HandlerFunc(func(context.Context, *consumer.Msg) error {
		runs.Add(1)
		return consumer.Terminal(errors.New("cannot be decoded"))
	})
	cfg := consumer.Config{Subject: "work.poison", JetStream: consumer.JetStream{Stream: "WORK", MaxDeliver: -1,
		Backoff: []time.Duration{20 * time.Millisecond}, DeadLetter: "dlq.poison"}}
	if err := e.sup.Handle("poison", cfg, poison); err != nil {
		t.Fatal(err)
	}
	stop := e.serve()
	e.subscribed(1)
	if _, err := e.js.Publish(ctx, "work.poison", []byte("m1")); err != nil {
		t.Fatal(err)
	}
	eventually(t, "three failed dead-letter copies", func() bool { return e.status("poison").Counters.DeadLetterFailed >= 3 })
	if n := runs.Load(); n != 1 {
		t.Fatalf("the handler ran %d times for a message it declared terminal, want 1", n)
	}
	if err := dlq.Purge(ctx); err != nil {
		t.Fatal(err)
	}
	natstest.WaitFor[consumer.DeadLettered](t, e.rec, 0, 20*time.Second, nil)
	cleanStop(t, stop)
	if n := runs.Load(); n != 1 {
		t.Fatalf("the handler ran %d times, want 1", n)
	}
}
