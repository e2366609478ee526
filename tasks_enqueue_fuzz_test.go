package corral_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/corral-go/corral"
	"github.com/corral-go/corral/corraltest"
	"github.com/corral-go/corral/internal/natstest"
	"github.com/corral-go/corral/publisher"
	"github.com/corral-go/corral/tasks"
)

// FuzzEnqueue enqueues two tasks with ids a and b and a header of the
// caller's: Enqueue refuses a task at the call with one of its documented
// errors, or the stream acks it, and then a task whose id was never
// enqueued before runs with that very id. Two different ids are two
// tasks: were they to share a record's subject, the second would be
// dropped as a duplicate and never run.
func FuzzEnqueue(f *testing.F) {
	for _, seed := range [][4]string{
		{"order:1", oldToken("order:1"), "", ""},
		{"dead-1.retry-1", oldToken("dead-1.retry-1"), "X-Job", "render"},
		{" " + tasks.ReservedMsgIDPrefix + "put-back:fail-v1:1", "fail-v1", "", ""},
		{"a%3A1", "a:1", tasks.TaskIDHeader, "a%3A1"},
		{"é", "%C3%A9", "Bad Header", "v"},
		{"tab\tinside", "line\nbreak", "X-Padded", " v "},
		{strings.Repeat("i", tasks.MaxIDLen), strings.Repeat("i", tasks.MaxIDLen+1), "", ""},
		{"same", "same", "Nats-Expected-Stream", "TASKS_q"},
		{"expects", "more", "Nats-Expected-Last-Sequence", "1"},
		{"id", "in a header", "Nats-Msg-Id", "header's"},
		{"", "Corral-Task-seq-1", "", ""},
	} {
		f.Add(seed[0], seed[1], seed[2], seed[3])
	}
	cfg := corral.Config{Tasks: map[string]tasks.Config{"q": {KeepCompleted: time.Hour}}}
	k := corraltest.New(f, cfg)
	q := &fuzzQueue{c: k.Client}
	if err := k.Client.HandleTasks("q", tasks.Config{}, tasks.HandlerFunc(func(_ context.Context, task *tasks.Task) error {
		q.ran.Store(task.ID(), struct{}{})
		return nil
	})); err != nil {
		f.Fatal(err)
	}
	k.Start(context.Background())
	f.Fuzz(func(t *testing.T, a, b, name, value string) {
		q.enqueue(t, a, name, value)
		q.enqueue(t, b, name, value)
	})
}

// fuzzQueue is queue q of a Client, and what it was given and ran.
type fuzzQueue struct {
	c        *corral.Client
	ran      sync.Map // ids of tasks run
	enqueued sync.Map // ids acked, in any input
}

// enqueue enqueues a task under id with header name set to value, when
// name is not empty, and fails t unless Enqueue refuses it with a
// documented error, or the stream acks it and, its id new, it runs under
// that very id.
func (q *fuzzQueue) enqueue(t *testing.T, id, name, value string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	opts := []publisher.Option{publisher.WithMsgID(id)}
	if name != "" {
		opts = append(opts, func(h nats.Header) { h.Set(name, value) })
	}
	h := nats.Header{}
	for _, o := range opts {
		o(h)
	}
	id = h.Get(jetstream.MsgIDHeader) // the header may be the id's
	f, err := q.c.Enqueue(ctx, "q", []byte(id), opts...)
	if err != nil {
		if !documented(err) {
			t.Fatalf("Enqueue(id %q, header %q: %q): %v, not one of its documented errors", id, name, value, err)
		}
		return
	}
	_, err = f.Wait(ctx)
	switch {
	case err != nil && strings.HasPrefix(name, "Nats-") && name != jetstream.MsgIDHeader:
		return // an expectation, a TTL and their kind are the stream's to check
	case err != nil:
		t.Fatalf("Enqueue(id %q, header %q: %q) was accepted, and its ack failed: %v", id, name, value, err)
	}
	if _, before := q.enqueued.LoadOrStore(id, struct{}{}); before {
		return // a duplicate, stored once
	}
	natstest.Eventually(t, 20*time.Second, func() bool { _, ok := q.ran.Load(id); return ok }, func() string {
		return fmt.Sprintf("task %q was acked and never ran under its id", id)
	})
}

// documented reports whether err is one Enqueue documents for a task
// refused at the call.
func documented(err error) bool {
	for _, want := range []error{tasks.ErrInvalidTaskID, tasks.ErrReservedMsgID, tasks.ErrReservedHeader,
		tasks.ErrTaskTooLarge, publisher.ErrBadHeader} {
		if errors.Is(err, want) {
			return true
		}
	}
	return false
}
