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
	"github.com/corral-go/corral/stream"
	"github.com/corral-go/corral/supervisor"
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
	if !errors.Is(err, supervisor.ErrInvalidConfig) || !strings.Contains(err.Error(), "255") {
		t.Fatalf("a %d-byte handler name: %.120v, want supervisor.ErrInvalidConfig naming the limit of %d", len(tooLong), err, subject.MaxNameLen)
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

// The names of a handler's stream and consumer follow one rule, the one
// every name that becomes a stream's or a consumer's follows: stream's
// and subject's ValidName agree, and a name too long says so the same way.
func TestStreamAndConsumerNamesFollowOneRule(t *testing.T) {
	for _, name := range []string{
		"ORDERS", "a-b_c", "é", strings.Repeat("n", subject.MaxNameLen), strings.Repeat("n", subject.MaxNameLen+1),
		"", "a.b", "a*", "a>", "a/b", `a\b`, "a b", "a\tb", "a\fb", "a\vb", "a\u0085b", "a\u00a0b", "a\u2028b", "a\u3000b",
	} {
		sErr, nErr := stream.ValidName(name), subject.ValidName(name)
		if (sErr == nil) != (nErr == nil) {
			t.Errorf("%.40q: stream.ValidName = %v, subject.ValidName = %v, want them to agree", name, sErr, nErr)
		}
	}
	long := strings.Repeat("n", stream.MaxNameLen+1)
	if err := stream.ValidName(long); !errors.Is(err, subject.ErrTooLong) {
		t.Errorf("stream.ValidName of %d bytes = %v, want subject.ErrTooLong", len(long), err)
	}
	if stream.MaxNameLen != subject.MaxNameLen {
		t.Errorf("stream.MaxNameLen = %d, subject.MaxNameLen = %d, want one limit", stream.MaxNameLen, subject.MaxNameLen)
	}
}
