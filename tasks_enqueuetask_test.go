package corral_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/corral-go/corral"
	"github.com/corral-go/corral/internal/natstest"
	"github.com/corral-go/corral/tasks"
)

// A task enqueued by EnqueueTask with an id is that id, exactly, on every
// run: delayed, handed back, failed and dead-lettered. Ids with dots,
// percent signs, spaces and other letters are no subject tokens, and
// none is rewritten.
func TestEnqueueTaskKeepsTheIDExactly(t *testing.T) {
	t.Parallel()
	cfg := embeddedConfig(t)
	parsed, err := corral.ParseConfig([]byte(`
streams:
  RENDER_FAILED: {subjects: [render.failed]}
tasks:
  render: {heartbeat: 300ms, lease_ttl: 2s, claim_wait: 2s, max_failures: 1, dead_letter: render.failed, backoff: [100ms],
           keep_results: 5m, max_result: 1KiB}
`))
	if err != nil {
		t.Fatal(err)
	}
	cfg.Streams, cfg.Tasks = parsed.Streams, parsed.Tasks
	c, err := corral.New(cfg, embeddedServer)
	if err != nil {
		t.Fatal(err)
	}
	ids := []string{"dead-1.retry-1", "50% off", "a@b", "Grüße an alle"}
	var mu sync.Mutex
	seen := map[string][]string{} // by data, the ids each run saw
	if err := c.HandleTasks("render", tasks.Config{}, tasks.HandlerFunc(func(_ context.Context, task *tasks.Task) error {
		mu.Lock()
		defer mu.Unlock()
		key := string(task.Data())
		seen[key] = append(seen[key], task.ID())
		if len(seen[key]) == 1 {
			return tasks.HandBack(100 * time.Millisecond)
		}
		return errors.New("fails for good")
	})); err != nil {
		t.Fatal(err)
	}
	running(t, c)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := c.EnqueueTask(ctx, "nope", nil); !errors.Is(err, corral.ErrUnknownQueue) {
		t.Fatalf("EnqueueTask to an undeclared queue: %v, want ErrUnknownQueue", err)
	}
	if _, err := c.EnqueueTask(ctx, "render", nil, tasks.WithID("Corral-Task-x")); !errors.Is(err, tasks.ErrReservedMsgID) {
		t.Fatalf("EnqueueTask with a reserved id: %v, want ErrReservedMsgID", err)
	}
	for i, id := range ids {
		f, err := c.EnqueueTask(ctx, "render", []byte(fmt.Sprint(i)), tasks.WithID(id), tasks.After(200*time.Millisecond),
			tasks.WithPriority(tasks.High))
		if err != nil {
			t.Fatal(err)
		}
		if err := f.Wait(ctx); err != nil {
			t.Fatal(err)
		}
	}
	// A duplicate is the answer to the enqueue's compare-and-set, not a
	// publisher's failure.
	for i := range 2 {
		f, err := c.EnqueueTask(ctx, "render", nil, tasks.WithID("later"), tasks.After(time.Hour))
		if err != nil {
			t.Fatal(err)
		}
		if err := f.Wait(ctx); i == 1 && !errors.Is(err, tasks.ErrDuplicate) || i == 0 && err != nil {
			t.Fatalf("enqueue %d of a task for later: %v", i, err)
		}
	}
	if st := c.Status().Publisher; st.Failed != 0 || st.Refused != 1 {
		t.Errorf("publisher: %+v, want the duplicate refused and nothing failed", st)
	}
	nc, err := c.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	var dead jetstream.Stream
	natstest.Eventually(t, 30*time.Second, func() bool {
		if dead, err = js.Stream(ctx, "RENDER_FAILED"); err != nil {
			return false
		}
		info, err := dead.Info(ctx)
		return err == nil && info.State.Msgs == uint64(len(ids))
	}, func() string { return fmt.Sprintf("the dead letters were not all stored: %v", err) })
	mu.Lock()
	defer mu.Unlock()
	for i, id := range ids {
		if runs := seen[fmt.Sprint(i)]; len(runs) != 2 || runs[0] != id || runs[1] != id {
			t.Errorf("task %q was seen as %q", id, runs)
		}
	}
	q, err := c.Tasks("render")
	if err != nil {
		t.Fatal(err)
	}
	// A task's dead letter is stored before its tombstone is written: the
	// tombstone may come a moment after the last dead letter.
	for _, id := range ids {
		var i tasks.Info
		natstest.Eventually(t, 30*time.Second, func() bool {
			i, err = q.Info(ctx, id)
			return err == nil && i.State == tasks.StateFailed
		}, func() string { return fmt.Sprintf("Info(%q): %+v, %v; want it failed", id, i, err) })
		if i.ID != id || i.Err != "fails for good" {
			t.Errorf("Info(%q): %+v; want it failed with its error", id, i)
		}
	}
	if _, err := c.Tasks("nope"); !errors.Is(err, corral.ErrUnknownQueue) {
		t.Errorf("Tasks of an undeclared queue: %v, want ErrUnknownQueue", err)
	}
	if w, _ := c.Worker("render"); w.Config().MaxResult != 1<<10 || w.Config().KeepResults != 5*time.Minute {
		t.Errorf("max_result %d, keep_results %v; want 1KiB and 5m from the file", w.Config().MaxResult, w.Config().KeepResults)
	}
	for seq := uint64(1); seq <= uint64(len(ids)); seq++ {
		m, err := dead.GetMsg(ctx, seq)
		if err != nil {
			t.Fatal(err)
		}
		if id := m.Header.Get(tasks.TaskIDHeader); id != ids[int(m.Data[0]-'0')] {
			t.Errorf("dead letter %d carries the id %q, want %q", seq, id, ids[int(m.Data[0]-'0')])
		}
	}
}

// Periodic schedules are declared in the file as in code, and a bad one
// is refused at validation, named by its path.
func TestSchedulesFromTheFile(t *testing.T) {
	t.Parallel()
	cfg, err := corral.ParseConfig([]byte(`
tasks:
  reports:
    schedules:
      nightly: {cron: "0 0 2 * * *", time_zone: Europe/Paris, data: '{"kind":"daily"}'}
      sweep:   {every: 1m, priority: low, latest_only: true}
`))
	if err != nil {
		t.Fatal(err)
	}
	got := cfg.Tasks["reports"].Schedules
	want := map[string]tasks.Schedule{
		"nightly": {Cron: "0 0 2 * * *", TimeZone: "Europe/Paris", Data: `{"kind":"daily"}`},
		"sweep":   {Every: time.Minute, Priority: tasks.Low, LatestOnly: true},
	}
	if len(got) != len(want) || got["nightly"] != want["nightly"] || got["sweep"] != want["sweep"] {
		t.Fatalf("schedules %+v, want %+v", got, want)
	}
	if _, err := corral.ParseConfig([]byte("tasks: {reports: {schedules: {s: {every: 1m, priority: urgent}}}}")); err == nil ||
		!strings.Contains(err.Error(), "urgent") {
		t.Errorf("an unknown priority: %v, want it refused naming it", err)
	}
	cfg.Tasks["reports"] = tasks.Config{Schedules: map[string]tasks.Schedule{"nightly": {Cron: "0 2 * * *"}}}
	if err := cfg.Validate(); !errors.Is(err, corral.ErrInvalidConfig) || !strings.Contains(err.Error(), "tasks.reports.schedules.nightly.cron:") {
		t.Errorf("a five-field cron: %v, want an error naming tasks.reports.schedules.nightly.cron", err)
	}
}
