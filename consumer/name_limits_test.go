package consumer_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/corral-go/corral/consumer"
	"github.com/corral-go/corral/internal/subject"
)

// A handler's name becomes its durable consumer's: one longer than the
// server accepts is refused when it is declared, with the limit, rather
// than by the server at every start. The longest accepted name works.
func TestHandlerNameLongerThanAConsumerNameIsRefused(t *testing.T) {
	t.Parallel()
	e := newJSEnv(t, jetstream.StreamConfig{Name: "NAMES", Subjects: []string{"names"}})
	ok := consumer.HandlerFunc(func(context.Context, *consumer.Msg) error { return nil })
	cfg := consumer.Config{JetStream: consumer.JetStream{Stream: "NAMES"}}
	tooLong := strings.Repeat("n", subject.MaxNameLen+1)
	err := e.sup.Handle(tooLong, cfg, ok)
	if !errors.Is(err, consumer.ErrInvalidConfig) || !strings.Contains(err.Error(), "255") {
		t.Fatalf("a %d-byte handler name: %.120v, want ErrInvalidConfig naming the limit of %d", len(tooLong), err, subject.MaxNameLen)
	}

	longest := strings.Repeat("n", subject.MaxNameLen)
	got := newSeen()
	if err := e.sup.Handle(longest, cfg, consumer.HandlerFunc(func(_ context.Context, m *consumer.Msg) error {
		got.add(m)
		return nil
	})); err != nil {
		t.Fatalf("a %d-byte handler name: %v", len(longest), err)
	}
	stop := e.serve()
	e.publishSeq("names", 3)
	eventually(t, "three messages through the consumer with the longest name", func() bool { return got.unique() == 3 })
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := e.js.Consumer(ctx, "NAMES", longest); err != nil {
		t.Errorf("the durable consumer named after the handler: %v", err)
	}
	cleanStop(t, stop)
}
