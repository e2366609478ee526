package tasks_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/corral-go/corral/internal/natstest"
	"github.com/corral-go/corral/tasks"
)

// NewMessage lays a task out as the queue expects: on its priority's
// subject, the id last and kept exactly in the queue's header, or as a
// schedule of its own that targets that subject at the time to the
// nanosecond; and refuses what the queue cannot carry, naming it.
func TestNewMessage(t *testing.T) {
	t.Parallel()
	const id = "a.b c%ü"
	m, err := tasks.NewMessage("q", []byte("x"), 1<<20, tasks.WithID(id), tasks.WithPriority(tasks.High),
		tasks.WithHeader(nats.Header{"K": []string{"v"}}))
	if err != nil {
		t.Fatal(err)
	}
	if want := "corral.tasks.q.t.1.a%2Eb%20c%25%C3%BC"; m.Subject != want || m.Header.Get(tasks.TaskIDHeader) != id ||
		m.Header.Get("K") != "v" || m.Header.Get(jetstream.ScheduleHeader) != "" {
		t.Errorf("subject %s, headers %v; want %s, the id %q kept, K, no schedule", m.Subject, m.Header, want, id)
	}
	// Stored only while no copy or schedule of the id waits; the Msg-Id is
	// the call's, in the queue's own space.
	if h := m.Header; h.Get(jetstream.ExpectedLastSubjSeqSubjHeader) != "corral.tasks.q.t.*.a%2Eb%20c%25%C3%BC" ||
		h.Get(jetstream.ExpectedLastSubjSeqHeader) != "0" || !strings.HasPrefix(h.Get(jetstream.MsgIDHeader), tasks.ReservedMsgIDPrefix) {
		t.Errorf("headers %v: want the expectation over the id's waiting copies, and a Msg-Id of the queue's", h)
	}
	at := time.Date(2030, 1, 2, 3, 4, 5, 6, time.FixedZone("x", 3600))
	m, err = tasks.NewMessage("q", nil, 1<<20, tasks.WithID("a"), tasks.At(at))
	if err != nil {
		t.Fatal(err)
	}
	if m.Subject != "corral.tasks.q.t.at.a" || m.Header.Get(jetstream.ScheduleHeader) != "@at 2030-01-02T02:04:05.000000006Z" ||
		m.Header.Get(jetstream.ScheduleTargetHeader) != "corral.tasks.q.t.2.a" {
		t.Errorf("scheduled: subject %s, headers %v", m.Subject, m.Header)
	}
	m, err = tasks.NewMessage("q", nil, 1<<20)
	if err != nil || !strings.HasPrefix(m.Subject, "corral.tasks.q.t.2.") || m.Header.Get(tasks.TaskIDHeader) == "" {
		t.Errorf("without an id: %v, %v; want a NUID in the normal slot", m, err)
	}
	for _, c := range []struct {
		opt  tasks.Option
		want error
		text string
	}{
		{tasks.WithPriority(7), nil, "unknown priority 7"},
		{tasks.WithID(" x"), tasks.ErrInvalidTaskID, `" x"`},
		{tasks.WithID("Corral-Task-x"), tasks.ErrReservedMsgID, "Corral-Task-x"},
		{tasks.WithHeader(nats.Header{"Nats-Schedule": []string{"@every 1s"}}), tasks.ErrReservedHeader, "Nats-Schedule"},
		{tasks.WithHeader(nats.Header{tasks.AttemptHeader: []string{"1"}}), tasks.ErrReservedHeader, tasks.AttemptHeader},
	} {
		_, err := tasks.NewMessage("q", nil, 1<<20, c.opt)
		if err == nil || c.want != nil && !errors.Is(err, c.want) || !strings.Contains(err.Error(), c.text) {
			t.Errorf("NewMessage: %v, want %v naming %s", err, c.want, c.text)
		}
	}
	if _, err := tasks.NewMessage("q", make([]byte, 1<<20), 1<<20); !errors.Is(err, tasks.ErrTaskTooLarge) {
		t.Errorf("NewMessage of max_payload bytes: %v, want ErrTaskTooLarge", err)
	}
}

// enqueueTasks publishes a task per id, as EnqueueTask would, with opts
// and the options opt gives each.
func enqueueTasks(t *testing.T, js jetstream.JetStream, ids []string, opt func(id string) []tasks.Option) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for _, id := range ids {
		m, err := tasks.NewMessage("q", []byte(id), 1<<20, append(opt(id), tasks.WithID(id))...)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := js.PublishMsg(ctx, m); err != nil {
			t.Fatalf("enqueue %s: %v", id, err)
		}
	}
}

// runLog records each run of a task: when it started.
type runLog struct {
	mu   sync.Mutex
	runs map[string][]time.Time
}

func newRunLog() *runLog { return &runLog{runs: map[string][]time.Time{}} }

func (l *runLog) handler() tasks.Handler {
	return tasks.HandlerFunc(func(_ context.Context, task *tasks.Task) error {
		l.mu.Lock()
		defer l.mu.Unlock()
		l.runs[task.ID()] = append(l.runs[task.ID()], time.Now())
		return nil
	})
}

func (l *runLog) snapshot() map[string][]time.Time {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := map[string][]time.Time{}
	for id, r := range l.runs {
		out[id] = slices.Clone(r)
	}
	return out
}

func (l *runLog) waitRan(t *testing.T, n int, timeout time.Duration) map[string][]time.Time {
	t.Helper()
	natstest.Eventually(t, timeout, func() bool { return len(l.snapshot()) >= n }, func() string {
		return fmt.Sprintf("%d of %d tasks ran", len(l.snapshot()), n)
	})
	return l.snapshot()
}

// checkOnTime fails t unless each task ran once, none before its time,
// and the 99th percentile of how late they started is within a second.
func checkOnTime(t *testing.T, runs map[string][]time.Time, at map[string]time.Time) {
	t.Helper()
	var late []time.Duration
	for id, r := range runs {
		if len(r) != 1 {
			t.Errorf("task %s ran %d times", id, len(r))
		}
		d := r[0].Sub(at[id])
		if d < 0 {
			t.Errorf("task %s started %v before its time", id, -d)
		}
		late = append(late, d)
	}
	slices.Sort(late)
	p99 := late[len(late)*99/100]
	t.Logf("%d scheduled tasks: late by %v (median) and %v (p99)", len(late), late[len(late)/2].Round(time.Millisecond), p99.Round(time.Millisecond))
	if p99 > time.Second {
		t.Errorf("the 99th percentile started %v after its time, want at most 1s", p99)
	}
}

// A task enqueued for a time runs then, not before, by the server's clock.
func TestScheduledTaskRunsOnTime(t *testing.T) {
	t.Parallel()
	srv := natstest.RunServer(t)
	js := declareQueue(t, natstest.Connect(t, srv.URL()), tasks.Config{}, "q")
	log := newRunLog()
	startWorker(t, srv.URL(), "q", tasks.Config{}, log.handler(), nil)
	const n = 100
	at, ids := map[string]time.Time{}, make([]string, n)
	start := time.Now()
	for i := range n {
		ids[i] = fmt.Sprintf("at-%d", i)
		at[ids[i]] = start.Add(time.Second + time.Duration(i)*20*time.Millisecond)
	}
	enqueueTasks(t, js, ids, func(id string) []tasks.Option { return []tasks.Option{tasks.At(at[id])} })
	checkOnTime(t, log.waitRan(t, n, 30*time.Second), at)
}

// Tasks waiting for their time survive a restart of the server (file
// storage): those due while it was down, and those due after, run once
// each once it is back, none before its time. How late the last runs is
// logged, not asserted: a loaded machine adds to it.
func TestScheduledTaskSurvivesRestart(t *testing.T) {
	t.Parallel()
	srv := natstest.RunServer(t)
	js := declareQueue(t, natstest.Connect(t, srv.URL()), tasks.Config{}, "q")
	log := newRunLog()
	startWorker(t, srv.URL(), "q", tasks.Config{}, log.handler(), nil)
	at, ids := map[string]time.Time{}, []string{"during-0", "during-1", "after-0", "after-1"}
	start := time.Now()
	for i, id := range ids {
		at[id] = start.Add(time.Second + time.Duration(i/2)*4*time.Second)
	}
	enqueueTasks(t, js, ids, func(id string) []tasks.Option { return []tasks.Option{tasks.At(at[id])} })
	srv.Shutdown()
	time.Sleep(time.Until(at["during-1"]) + 500*time.Millisecond) // the outage spans the first two's time
	srv.Start()
	runs := log.waitRan(t, len(ids), 60*time.Second)
	for id, r := range runs {
		if len(r) != 1 || r[0].Before(at[id]) {
			t.Errorf("task %s ran at %v, due at %v: want once, not before", id, r, at[id])
		}
	}
	t.Logf("the task due after the restart ran %v late", runs["after-1"][0].Sub(at["after-1"]).Round(time.Millisecond))
}

// Tasks waiting for their time on a replicated queue run once each, on
// time, across a leader change of the queue's stream and the loss of
// the node that led it.
func TestScheduledTaskSurvivesLeaderChange(t *testing.T) {
	t.Parallel()
	cluster := natstest.RunCluster(t, 3)
	cfg := tasks.Config{Replicas: 3}
	nc := natstest.Connect(t, cluster.URLs())
	js := declareQueue(t, nc, cfg, "q")
	log := newRunLog()
	startWorker(t, cluster.URLs(), "q", cfg, log.handler(), nil)
	const n = 50
	at, ids := map[string]time.Time{}, make([]string, n)
	start := time.Now()
	for i := range n {
		ids[i] = fmt.Sprintf("at-%d", i)
		at[ids[i]] = start.Add(3*time.Second + time.Duration(i)*60*time.Millisecond)
	}
	enqueueTasks(t, js, ids, func(id string) []tasks.Option { return []tasks.Option{tasks.At(at[id])} })
	stepDown(t, nc, "$JS.API.STREAM.LEADER.STEPDOWN.TASKS_q")
	leader := ""
	natstest.Eventually(t, 30*time.Second, func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		if s, err := js.Stream(ctx, "TASKS_q"); err == nil && s.CachedInfo().Cluster != nil {
			leader = s.CachedInfo().Cluster.Leader
		}
		return leader != ""
	}, func() string { return "the queue stream has no leader after stepping down" })
	for i, node := range cluster.Nodes {
		if node.Raw() != nil && node.Raw().Name() == leader {
			cluster.Stop(i)
		}
	}
	runs := log.waitRan(t, n, 60*time.Second)
	for id, r := range runs {
		if len(r) != 1 || r[0].Before(at[id]) {
			t.Errorf("task %s ran at %v, due at %v: want once, not before", id, r, at[id])
		}
	}
}

// A failing task waits for its retry as a schedule of its own, among the
// queue's schedules, not as a copy in the queue that workers pass over
// until its time.
func TestBackoffIsSchedule(t *testing.T) {
	t.Parallel()
	srv := natstest.RunServer(t)
	nc := natstest.Connect(t, srv.URL())
	js := declareQueue(t, nc, tasks.Config{}, "q")
	var mu sync.Mutex
	var runs []time.Time
	w := startWorker(t, srv.URL(), "q", tasks.Config{Backoff: []time.Duration{2 * time.Second}, MaxFailures: 2},
		tasks.HandlerFunc(func(context.Context, *tasks.Task) error {
			mu.Lock()
			defer mu.Unlock()
			runs = append(runs, time.Now())
			if len(runs) == 1 {
				return errors.New("first run fails")
			}
			return nil
		}), nil)
	enqueueTasks(t, js, []string{"retried"}, func(string) []tasks.Option { return nil })
	var schedule *jetstream.RawStreamMsg
	natstest.Eventually(t, 10*time.Second, func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		s, err := js.Stream(ctx, "TASKS_q")
		if err == nil {
			schedule, err = s.GetLastMsgForSubject(ctx, "corral.tasks.q.t.at.retried")
		}
		return err == nil
	}, func() string { return "the retry never waited as a schedule" })
	if h := schedule.Header; !strings.HasPrefix(h.Get(jetstream.ScheduleHeader), "@at ") ||
		h.Get(jetstream.ScheduleTargetHeader) != "corral.tasks.q.t.0.retried" || h.Get(tasks.AttemptHeader) != "1" {
		t.Errorf("the retry's schedule: %v; want @at, targeting the tasks that come back, at attempt 1", h)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	if s, err := js.Stream(ctx, "TASKS_q"); err != nil {
		t.Fatal(err)
	} else if m, err := s.GetLastMsgForSubject(ctx, "corral.tasks.q.t.0.retried"); !errors.Is(err, jetstream.ErrMsgNotFound) {
		t.Errorf("a copy waits beside the retry's schedule: %v, %v", m, err)
	}
	natstest.Eventually(t, 10*time.Second, func() bool { return w.w.Status().Counters.Completed == 1 }, func() string {
		return fmt.Sprintf("the retry did not complete: %+v", w.w.Status().Counters)
	})
	mu.Lock()
	defer mu.Unlock()
	if wait := runs[1].Sub(runs[0]); wait < 2*time.Second {
		t.Errorf("retried after %v, want the 2s backoff", wait)
	}
}
