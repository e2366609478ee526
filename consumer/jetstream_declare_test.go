package consumer_test

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/corral-go/corral/consumer"
	"github.com/corral-go/corral/internal/natstest"
	"github.com/corral-go/corral/supervisor"
)

func TestJetStreamRecreatesADeletedConsumer(t *testing.T) {
	t.Parallel()
	e := newJSEnv(t, jetstream.StreamConfig{Name: "QUEUE", Subjects: []string{"queue"}, Retention: jetstream.WorkQueuePolicy})
	got := newSeen()
	h := consumer.HandlerFunc(func(ctx context.Context, m *consumer.Msg) error {
		got.add(m)
		return nil
	})
	if err := e.sup.Handle("q", consumer.Config{Workers: 2, JetStream: consumer.JetStream{Stream: "QUEUE"}}, h); err != nil {
		t.Fatal(err)
	}
	stop := e.serve()
	e.subscribed(1)
	e.publishSeq("queue", 100)
	eventually(t, "first hundred", func() bool { return got.unique() == 100 })

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := e.js.DeleteConsumer(ctx, "QUEUE", "q"); err != nil {
		t.Fatal(err)
	}
	natstest.WaitFor[consumer.ConsumerRecreated](t, e.rec, 0, 20*time.Second, nil)
	for i := 100; i < 200; i++ {
		if _, err := e.js.Publish(ctx, "queue", []byte(strconv.Itoa(i))); err != nil {
			t.Fatal(err)
		}
	}
	natstest.Eventually(t, 20*time.Second, func() bool { return got.unique() == 200 }, func() string {
		return fmt.Sprintf("processed %d of 200, missing %v", got.unique(), first(got.missing(200), 10))
	})
	cleanStop(t, stop)
}

func TestJetStreamBindRequiresTheConsumer(t *testing.T) {
	t.Parallel()
	e := newJSEnv(t, jetstream.StreamConfig{Name: "BOUND", Subjects: []string{"bound"}})
	cfg := consumer.Config{JetStream: consumer.JetStream{Stream: "BOUND", Consumer: "absent", Bind: true},
		Restart: supervisor.Policy{Mode: supervisor.Temporary}}
	if err := e.sup.Handle("bound", cfg, consumer.HandlerFunc(func(context.Context, *consumer.Msg) error { return nil })); err != nil {
		t.Fatal(err)
	}
	stop := e.serve()
	ev, _ := natstest.WaitFor[supervisor.ChildStopped](t, e.rec, 0, 10*time.Second, nil)
	if !errors.Is(ev.Err, jetstream.ErrConsumerNotFound) {
		t.Fatalf("got %v, want the missing consumer reported", ev.Err)
	}
	cleanStop(t, stop)
}

func TestJetStreamRefusesAChangeThatCannotBeMadeInPlace(t *testing.T) {
	t.Parallel()
	e := newJSEnv(t, jetstream.StreamConfig{Name: "FIXED", Subjects: []string{"fixed"}})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := e.js.CreateConsumer(ctx, "FIXED", jetstream.ConsumerConfig{Durable: "c", DeliverPolicy: jetstream.DeliverNewPolicy,
		AckPolicy: jetstream.AckExplicitPolicy}); err != nil {
		t.Fatal(err)
	}
	cfg := consumer.Config{JetStream: consumer.JetStream{Stream: "FIXED", Consumer: "c", DeliverPolicy: "all"},
		Restart: supervisor.Policy{Mode: supervisor.Temporary}}
	if err := e.sup.Handle("c", cfg, consumer.HandlerFunc(func(context.Context, *consumer.Msg) error { return nil })); err != nil {
		t.Fatal(err)
	}
	stop := e.serve()
	ev, _ := natstest.WaitFor[supervisor.ChildStopped](t, e.rec, 0, 10*time.Second, nil)
	if ev.Err == nil || !strings.Contains(ev.Err.Error(), "cannot be changed in place") {
		t.Fatalf("got %v, want a clear refusal", ev.Err)
	}
	cleanStop(t, stop)
}
