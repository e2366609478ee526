package tasks_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/corral-go/corral/internal/natstest"
	"github.com/corral-go/corral/stream"
	"github.com/corral-go/corral/supervisor"
	"github.com/corral-go/corral/tasks"
)

// queueSubjects are the subjects of queue q's stream: its Subject, then
// the families kept for waiting copies and schedules.
var queueSubjects = []string{"corral.tasks.q", "corral.tasks.q.t.>", "corral.tasks.q.periodic.*"}

// queueStream reads back the configuration of queue q's stream and its
// consumer, once a worker has declared both.
func queueStream(t *testing.T, js jetstream.JetStream) (*jetstream.StreamInfo, *jetstream.ConsumerInfo) {
	t.Helper()
	var si *jetstream.StreamInfo
	var ci *jetstream.ConsumerInfo
	var err error
	natstest.Eventually(t, 30*time.Second, func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		var s jetstream.Stream
		if s, err = js.Stream(ctx, "TASKS_q"); err != nil {
			return false
		}
		if si, err = s.Info(ctx); err != nil {
			return false
		}
		var c jetstream.Consumer
		if c, err = s.Consumer(ctx, "workers"); err != nil {
			return false
		}
		ci, err = c.Info(ctx)
		return err == nil
	}, func() string { return fmt.Sprintf("the queue's stream and consumer were not declared: %v", err) })
	return si, ci
}

// checkQueueStream fails t unless si is queue q's stream as declared now:
// message schedules and rollups allowed, the queue's subjects stored.
func checkQueueStream(t *testing.T, si *jetstream.StreamInfo) {
	t.Helper()
	c := si.Config
	if !c.AllowMsgSchedules || !c.AllowRollup || c.Retention != jetstream.WorkQueuePolicy || !slices.Equal(c.Subjects, queueSubjects) {
		t.Errorf("queue stream: schedules %v, rollup %v, retention %v, subjects %v; want schedules and rollup, work-queue, %v",
			c.AllowMsgSchedules, c.AllowRollup, c.Retention, c.Subjects, queueSubjects)
	}
}

// A worker declares the queue's stream with message schedules, rollups
// and the subjects kept for waiting copies and schedules, beside the held
// stream, whose subjects the server would refuse were they to overlap.
// The queue's consumer stays unfiltered until it is replaced by consumers
// that select no schedule: one that did would take a schedule, and its
// ack delete it.
func TestQueueStreamAllowsSchedules(t *testing.T) {
	t.Parallel()
	srv := natstest.RunServer(t)
	startWorker(t, srv.URL(), "q", tasks.Config{}, tasks.HandlerFunc(func(context.Context, *tasks.Task) error { return nil }), nil)
	si, ci := queueStream(t, natstest.JetStream(t, srv.URL()))
	checkQueueStream(t, si)
	if f := ci.Config.FilterSubject + strings.Join(ci.Config.FilterSubjects, ","); f != "" {
		t.Errorf("the queue's consumer filters on %q, want it unfiltered", f)
	}
}

// A queue stream declared by the previous version (the queue's Subject
// alone, without message schedules) is updated in place when a worker
// of this one starts, and the tasks waiting in it still run.
func TestQueueStreamOfThePreviousLayoutIsUpdated(t *testing.T) {
	t.Parallel()
	srv := natstest.RunServer(t)
	js := natstest.JetStream(t, srv.URL())
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	previous := stream.Config{Subjects: []string{"corral.tasks.q"}, Retention: "workqueue", Duplicates: 2 * time.Minute}
	if _, err := previous.Declare(ctx, js, "TASKS_q"); err != nil {
		t.Fatal(err)
	}
	// The previous version's worker made the queue's consumer as it is now.
	if _, err := js.CreateOrUpdateConsumer(ctx, "TASKS_q", jetstream.ConsumerConfig{Durable: "workers",
		AckPolicy: jetstream.AckExplicitPolicy, AckWait: 30 * time.Second, MaxDeliver: -1, MaxAckPending: -1}); err != nil {
		t.Fatal(err)
	}
	const n = 10
	for i := range n {
		if _, err := js.Publish(ctx, "corral.tasks.q", []byte(fmt.Sprint(i)), jetstream.WithMsgID(fmt.Sprintf("task-%d", i))); err != nil {
			t.Fatal(err)
		}
	}
	done := newLedger()
	startWorker(t, srv.URL(), "q", tasks.Config{}, tasks.HandlerFunc(func(_ context.Context, task *tasks.Task) error {
		done.complete(task.ID())
		return nil
	}), nil)
	done.waitCompleted(t, n, 30*time.Second)
	si, _ := queueStream(t, js)
	checkQueueStream(t, si)
}

// A Subject among the queues' own subjects, under corral.tasks.<queue>.,
// is refused, naming the field; the default and others are not.
func TestSubjectAmongTheQueuesOwnIsRefused(t *testing.T) {
	t.Parallel()
	for _, subj := range []string{"corral.tasks.q.t.at", "corral.tasks.q.held.x.y", "corral.tasks.other.jobs"} {
		err := tasks.Config{Subject: subj}.Validate()
		if !errors.Is(err, supervisor.ErrInvalidConfig) || !strings.Contains(err.Error(), "subject:") || !strings.Contains(err.Error(), subj) {
			t.Errorf("subject %q: %v, want it refused naming the field and the value", subj, err)
		}
	}
	for _, subj := range []string{"corral.tasks.q", "corral.tasks", "render.jobs"} {
		if err := (tasks.Config{Subject: subj}).Validate(); err != nil {
			t.Errorf("subject %q: %v", subj, err)
		}
	}
}
