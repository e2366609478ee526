package corral_test

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"slices"
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
	"github.com/corral-go/corral/stream"
	"github.com/corral-go/corral/tasks"
)

// runs counts the runs of each task by the id its handler sees.
type runs struct {
	mu  sync.Mutex
	ids map[string]int
}

func (r *runs) add(id string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.ids[id]++
}

func (r *runs) count(id string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.ids[id]
}

func (r *runs) String() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return fmt.Sprint(r.ids)
}

// taskKit runs a Client on the embedded server with queue q, whose
// handler is h.
func taskKit(t *testing.T, h tasks.HandlerFunc) *corraltest.Kit {
	t.Helper()
	cfg := corral.Config{Tasks: map[string]tasks.Config{"q": {ClaimWait: time.Second,
		Backoff: []time.Duration{10 * time.Millisecond}}}}
	k := corraltest.New(t, cfg)
	if err := k.Client.HandleTasks("q", tasks.Config{}, h); err != nil {
		t.Fatal(err)
	}
	k.Start(context.Background())
	return k
}

// enqueued enqueues a task and waits for the stream's ack.
func enqueued(t *testing.T, c *corral.Client, data []byte, opts ...publisher.Option) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	f, err := c.Enqueue(ctx, "q", data, opts...)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Wait(ctx); err != nil {
		t.Fatal(err)
	}
}

// Enqueue refuses, at the call, what the queue could not carry through
// its claim, put-back and dead letter, or what would take the place of
// one of the queue's own writes, each with an error that names the
// limit or the value.
func TestEnqueueRefusesWhatTheQueueCannotCarry(t *testing.T) {
	t.Parallel()
	k := taskKit(t, func(context.Context, *tasks.Task) error { return nil })
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	withHeader := func(k, v string) publisher.Option { return func(h nats.Header) { h.Set(k, v) } }
	for _, tc := range []struct {
		name string
		data []byte
		opts []publisher.Option
		want string
	}{
		{"data near max_payload", make([]byte, 1<<20-100), []publisher.Option{publisher.WithMsgID("big")}, "the queue takes at most"},
		{"reserved id after a space", nil, []publisher.Option{publisher.WithMsgID(" " + tasks.ReservedMsgIDPrefix + "put-back:fail-v1:1")}, "reserved"},
		{"id of 200 KB", nil, []publisher.Option{publisher.WithMsgID(strings.Repeat("i", 200_000))}, "200000 bytes, the limit is 512"},
		{"queue's own header", nil, []publisher.Option{publisher.WithMsgID("x"), withHeader(tasks.TaskIDHeader, "y")}, tasks.TaskIDHeader},
		{"a message schedule", nil, []publisher.Option{publisher.WithMsgID("s"), withHeader("Nats-Schedule", "@every 1s"),
			withHeader("Nats-Schedule-Target", "corral.tasks.q.t.2.x")}, "Nats-Schedule"},
		{"a schedule's fired copy", nil, []publisher.Option{publisher.WithMsgID("f"), withHeader("Nats-Scheduler", "corral.tasks.q.t.at.x")}, "Nats-Scheduler"},
	} {
		f, err := k.Client.Enqueue(ctx, "q", tc.data, tc.opts...)
		if err == nil {
			_, err = f.Wait(ctx)
			t.Errorf("%s: Enqueue accepted the task (its ack: %v), want it refused saying %q", tc.name, err, tc.want)
			continue
		}
		if !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: Enqueue: %v, want it to say %q", tc.name, err, tc.want)
		}
	}
}

// A reserved id with a leading space, which the server stores without it,
// cannot take the place of a task's put-back: the task that fails its
// first run runs again and completes.
func TestReservedIDAfterASpaceLosesNoTask(t *testing.T) {
	t.Parallel()
	var ran runs
	ran.ids = map[string]int{}
	k := taskKit(t, func(_ context.Context, task *tasks.Task) error {
		if task.Failures() == 0 {
			return errors.New("first run fails")
		}
		ran.add(task.ID())
		return nil
	})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if f, err := k.Client.Enqueue(ctx, "q", nil, publisher.WithMsgID(" "+tasks.ReservedMsgIDPrefix+"put-back:fail-v1:1")); err == nil {
		_, _ = f.Wait(ctx)
	} else if !errors.Is(err, tasks.ErrReservedMsgID) {
		t.Fatalf("Enqueue of a reserved id after a space: %v, want ErrReservedMsgID", err)
	}
	enqueued(t, k.Client, nil, publisher.WithMsgID("fail-v1"))
	natstest.Eventually(t, 30*time.Second, func() bool { return ran.count("fail-v1") == 1 }, func() string {
		return fmt.Sprintf("task fail-v1 did not complete: %v\n%s", &ran, k.Client.Status())
	})
}

// oldToken is how a task id that is not a subject token was stored
// before: a hash any literal id could equal.
func oldToken(id string) string {
	sum := sha256.Sum256([]byte(id))
	return base64.RawURLEncoding.EncodeToString(sum[:])[:22]
}

// Distinct ids are distinct tasks, whatever characters they hold, and
// each task's ID is the id it was enqueued with.
func TestDistinctIDsAreDistinctTasks(t *testing.T) {
	t.Parallel()
	var ran runs
	ran.ids = map[string]int{}
	k := taskKit(t, func(_ context.Context, task *tasks.Task) error {
		ran.add(task.ID())
		return nil
	})
	ids := []string{"order:1", oldToken("order:1"), "dead-1.retry-1", oldToken("dead-1.retry-1"), "a%3A1", "a:1", "seq-1"}
	for _, id := range ids {
		enqueued(t, k.Client, []byte(id), publisher.WithMsgID(id))
	}
	natstest.Eventually(t, 30*time.Second, func() bool {
		for _, id := range ids {
			if ran.count(id) != 1 {
				return false
			}
		}
		return true
	}, func() string { return fmt.Sprintf("want each of %q run once, by its own id: ran %v", ids, &ran) })
}

// A task as large as Enqueue takes runs through every write the queue
// makes of it: claims of copies grown by a failure and a hand-back,
// their put-backs, and a dead letter with the longest error text kept.
// One byte more is refused, saying the limit.
func TestLargestTaskRunsThroughEveryWrite(t *testing.T) {
	t.Parallel()
	cfg := corral.Config{
		Streams: map[string]stream.Config{"DEAD": {Subjects: []string{"dead.q"}}},
		Tasks: map[string]tasks.Config{"q": {MaxFailures: 3, DeadLetter: "dead.q", ClaimWait: time.Second,
			Backoff: []time.Duration{10 * time.Millisecond}}},
	}
	k := corraltest.New(t, cfg)
	long := errors.New(strings.Repeat("é", tasks.MaxErrorLen))
	var ran runs
	ran.ids = map[string]int{}
	if err := k.Client.HandleTasks("q", tasks.Config{}, tasks.HandlerFunc(func(_ context.Context, task *tasks.Task) error {
		ran.add(task.ID())
		switch {
		case strings.HasPrefix(task.ID(), "fails"), task.Failures() == 0:
			return long
		case task.Attempt() == 1:
			return tasks.HandBack(0)
		}
		return nil
	})); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	k.Start(ctx)
	header := func(h nats.Header) { h.Set("Render-Options", "4k; hdr") }
	for _, id := range []string{"completes:ü/" + strings.Repeat("é", 200), "fails:ü/" + strings.Repeat("é", 200)} {
		_, err := k.Client.Enqueue(ctx, "q", make([]byte, 1<<20), publisher.WithMsgID(id), header)
		var tooLarge *tasks.TooLargeError
		if !errors.As(err, &tooLarge) || !errors.Is(err, tasks.ErrTaskTooLarge) || !errors.Is(err, nats.ErrMaxPayload) {
			t.Fatalf("Enqueue of 1 MiB: %v, want a *tasks.TooLargeError", err)
		}
		largest := 1<<20 - (tooLarge.Size - tooLarge.Limit)
		if _, err := k.Client.Enqueue(ctx, "q", make([]byte, largest+1), publisher.WithMsgID(id), header); !errors.As(err, &tooLarge) ||
			!strings.Contains(err.Error(), fmt.Sprintf("the queue takes at most %d", tooLarge.Limit)) {
			t.Fatalf("Enqueue of %d bytes, one more than the limit: %v, want it refused saying the limit", largest+1, err)
		}
		enqueued(t, k.Client, make([]byte, largest), publisher.WithMsgID(id), header)
	}
	natstest.Eventually(t, 30*time.Second, func() bool {
		return ran.count("completes:ü/"+strings.Repeat("é", 200)) == 3 && ran.count("fails:ü/"+strings.Repeat("é", 200)) == 3
	}, func() string { return fmt.Sprintf("runs: %v\n%s", &ran, k.Client.Status()) })
	dead := k.WaitStreamMsgs(ctx, "DEAD", "dead.q", 1)
	if got := dead[0].Header.Get(tasks.TaskIDHeader); got != "fails:ü/"+strings.Repeat("é", 200) {
		t.Fatalf("dead letter of task %q, want the failing one", got)
	}
	w, _ := k.Client.Worker("q")
	natstest.Eventually(t, 30*time.Second, func() bool { c := w.Status().Counters; return c.Completed == 1 && w.Status().Held == 0 },
		func() string { return k.Client.Status().String() })
}

// A Client that enqueues before any worker runs declares the queue's
// stream as a worker does: with message schedules, and the subjects kept
// for waiting copies and schedules beside the queue's own.
func TestEnqueueBeforeAnyWorkerDeclaresSchedules(t *testing.T) {
	t.Parallel()
	k := corraltest.New(t, corral.Config{Tasks: map[string]tasks.Config{"q": {}}})
	k.Start(context.Background())
	enqueued(t, k.Client, []byte("waits"), publisher.WithMsgID("w-1"))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	nc, err := k.Client.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	s, err := js.Stream(ctx, "TASKS_q")
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"corral.tasks.q", "corral.tasks.q.t.>", "corral.tasks.q.periodic.*"}
	if c := s.CachedInfo().Config; !c.AllowMsgSchedules || !c.AllowRollup || !slices.Equal(c.Subjects, want) || s.CachedInfo().State.Msgs != 1 {
		t.Errorf("queue stream: schedules %v, rollup %v, subjects %v, %d messages; want schedules, rollup, %v and the task",
			c.AllowMsgSchedules, c.AllowRollup, c.Subjects, s.CachedInfo().State.Msgs, want)
	}
}
