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

	"github.com/corral-go/corral/internal/jsapi"
	"github.com/corral-go/corral/internal/natstest"
	"github.com/corral-go/corral/stream"
	"github.com/corral-go/corral/supervisor"
	"github.com/corral-go/corral/tasks"
)

// queueSubjects are the subjects of queue q's stream: its Subject, then
// the families kept for waiting copies and schedules.
var queueSubjects = []string{"corral.tasks.q", "corral.tasks.q.t.>", "corral.tasks.q.periodic.*"}

// slotConsumers are the consumers of queue q's stream, in the order a
// worker pulls them, with their filters.
var slotConsumers = []struct {
	name    string
	filters []string
}{
	{"back", []string{"corral.tasks.q.t.0.*"}},
	{"high", []string{"corral.tasks.q.t.1.*"}},
	{"normal", []string{"corral.tasks.q", "corral.tasks.q.t.2.*"}},
	{"low", []string{"corral.tasks.q.t.3.*"}},
}

// queueStream reads back the configuration of queue q's stream and its
// consumers, once a worker has declared them.
func queueStream(t *testing.T, js jetstream.JetStream) (*jetstream.StreamInfo, []*jetstream.ConsumerInfo) {
	t.Helper()
	var si *jetstream.StreamInfo
	var cis []*jetstream.ConsumerInfo
	var err error
	natstest.Eventually(t, 30*time.Second, func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		var s jetstream.Stream
		if s, err = js.Stream(ctx, "TASKS_q"); err != nil {
			return false
		}
		cis = cis[:0]
		for _, sc := range slotConsumers {
			var c jetstream.Consumer
			if c, err = s.Consumer(ctx, sc.name); err != nil {
				return false
			}
			cis = append(cis, c.CachedInfo())
		}
		si, err = s.Info(ctx) // after the consumers, which it counts
		return err == nil
	}, func() string { return fmt.Sprintf("the queue's stream and consumers were not declared: %v", err) })
	return si, cis
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
// stream, whose subjects the server would refuse were they to overlap;
// and one consumer per slot, filtered on the slot's waiting copies alone:
// one that took a schedule would delete it by its ack.
func TestQueueStreamAllowsSchedules(t *testing.T) {
	t.Parallel()
	srv := natstest.RunServer(t)
	startWorker(t, srv.URL(), "q", tasks.Config{ClaimWait: 7 * time.Second},
		tasks.HandlerFunc(func(context.Context, *tasks.Task) error { return nil }), nil)
	si, cis := queueStream(t, natstest.JetStream(t, srv.URL()))
	checkQueueStream(t, si)
	for i, ci := range cis {
		c, want := ci.Config, slotConsumers[i]
		if filters := append([]string{c.FilterSubject}, c.FilterSubjects...); !slices.Equal(filters[1:], want.filters) || filters[0] != "" {
			t.Errorf("consumer %s filters on %q, want %q", want.name, filters, want.filters)
		}
		if c.AckPolicy != jetstream.AckExplicitPolicy || c.AckWait != 7*time.Second || c.MaxDeliver != -1 || c.MaxAckPending != -1 {
			t.Errorf("consumer %s: ack %v, ack wait %v, max deliver %d, max ack pending %d; want explicit, the claim wait, no limits",
				want.name, c.AckPolicy, c.AckWait, c.MaxDeliver, c.MaxAckPending)
		}
		if c.Description == "" {
			t.Errorf("consumer %s has no description", want.name)
		}
	}
	if si.State.Consumers != len(slotConsumers) {
		t.Errorf("the queue stream has %d consumers, want the %d slots' alone", si.State.Consumers, len(slotConsumers))
	}
}

// A queue stream declared by the previous version (the queue's Subject
// alone, without message schedules, and one unfiltered consumer) is
// updated in place when a worker of this one starts: the consumer is
// replaced by the slots', and the tasks waiting, those the previous
// worker had taken and not acked included, all run.
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
	// A worker of the previous version had taken three and not acked them
	// when it went.
	old, err := js.Consumer(ctx, "TASKS_q", "workers")
	if err != nil {
		t.Fatal(err)
	}
	batch, err := old.FetchNoWait(3)
	if err != nil {
		t.Fatal(err)
	}
	taken := 0
	for range batch.Messages() {
		taken++
	}
	if taken != 3 {
		t.Fatalf("the previous worker took %d, want 3", taken)
	}
	done := newLedger()
	startWorker(t, srv.URL(), "q", tasks.Config{}, tasks.HandlerFunc(func(_ context.Context, task *tasks.Task) error {
		done.complete(task.ID())
		return nil
	}), nil)
	done.waitCompleted(t, n, 30*time.Second)
	if _, twice := done.counts(); twice > 0 {
		t.Errorf("%d tasks completed more than once", twice)
	}
	si, _ := queueStream(t, js)
	checkQueueStream(t, si)
	if _, err := js.Consumer(ctx, "TASKS_q", "workers"); !errors.Is(err, jetstream.ErrConsumerNotFound) {
		t.Errorf("the previous layout's consumer: %v, want it deleted", err)
	}
	// A worker of the previous version cannot declare it again beside the
	// slots' consumers, and so takes nothing from the queue.
	_, err = js.CreateOrUpdateConsumer(ctx, "TASKS_q", jetstream.ConsumerConfig{Durable: "workers",
		AckPolicy: jetstream.AckExplicitPolicy, AckWait: 30 * time.Second, MaxDeliver: -1, MaxAckPending: -1})
	if code, _ := jsapi.Code(err); code != 10099 { // multiple non-filtered consumers not allowed on a work-queue stream
		t.Errorf("declaring the previous layout's consumer again: %v, want it refused (10099)", err)
	}
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
