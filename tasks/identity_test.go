package tasks_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/corral-go/corral/internal/natstest"
	"github.com/corral-go/corral/supervisor"
	"github.com/corral-go/corral/tasks"
)

// A worker's process name is shown beside its lease: in Status, in
// LeaseAcquired, in the record of the task it runs and in the tombstone
// that ends it, and in its lease's key.
func TestProcessNamesTheWorker(t *testing.T) {
	t.Parallel()
	srv := natstest.RunServer(t)
	nc := natstest.Connect(t, srv.URL())
	rec := natstest.NewRecorder()
	cfg := childConfig
	cfg.ClaimAfter = -1 // the record is read while the task runs
	cfg.Process = "render-1@host-a/7"
	started, release := make(chan string, 1), make(chan struct{})
	w := startWorker(t, srv.URL(), "q", cfg, tasks.HandlerFunc(func(_ context.Context, task *tasks.Task) error {
		started <- task.Worker()
		<-release
		return nil
	}), rec)
	acquired, _ := natstest.WaitFor(t, rec, 0, 30*time.Second, func(tasks.LeaseAcquired) bool { return true })
	if acquired.Process != cfg.Process || acquired.Worker == "" {
		t.Errorf("LeaseAcquired %+v, want process %q beside a lease", acquired, cfg.Process)
	}
	if st := w.w.Status(); st.Process != cfg.Process || st.Worker != acquired.Worker {
		t.Errorf("Status %+v, want process %q and worker %q", st, cfg.Process, acquired.Worker)
	}
	publish(t, nc, "t1")
	var worker string
	select {
	case worker = <-started:
	case <-time.After(30 * time.Second):
		t.Fatal("the task never started")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	js, _ := jetstream.New(nc)
	held, err := js.Stream(ctx, "TASKS_q_HELD")
	if err != nil {
		t.Fatal(err)
	}
	subject := "corral.tasks.q.held.t1." + worker
	checkRecord := func(state string) {
		t.Helper()
		m, err := held.GetLastMsgForSubject(ctx, subject)
		if err != nil {
			t.Fatalf("%s: %v", subject, err)
		}
		if got := m.Header.Get("Corral-Task-Process"); m.Header.Get("Corral-Task-State") != state || got != cfg.Process {
			t.Errorf("%s: the %s record names process %q, want %q (headers %v)", subject, state, got, cfg.Process, m.Header)
		}
	}
	checkRecord("held")
	leases, err := js.KeyValue(ctx, "corral_tasks_q")
	if err != nil {
		t.Fatal(err)
	}
	if e, err := leases.Get(ctx, "w."+worker); err != nil || !strings.HasSuffix(string(e.Value()), " "+cfg.Process) {
		t.Errorf("the lease key w.%s: %v, want its value to end with the process", worker, err)
	} else {
		t.Logf("lease key w.%s holds %q", worker, e.Value())
	}
	close(release)
	natstest.Eventually(t, 30*time.Second, func() bool { return w.w.Status().Counters.Completed == 1 }, func() string {
		return fmt.Sprintf("the task was not completed: %+v", w.w.Status())
	})
	checkRecord("done")
}

// A worker given no process name takes "<host>/<pid>"; DefaultProcess
// puts the application's name before it, and makes what it is given pass
// Validate.
func TestDefaultProcess(t *testing.T) {
	t.Parallel()
	want := fmt.Sprint(os.Getpid())
	if host, err := os.Hostname(); err == nil {
		want = host + "/" + want
	}
	w, err := tasks.New("q", tasks.Config{}, nil, tasks.HandlerFunc(func(context.Context, *tasks.Task) error { return nil }))
	if err != nil {
		t.Fatal(err)
	}
	if got := w.Config().Process; got != want {
		t.Errorf("the default process is %q, want %q", got, want)
	}
	if got := w.Status().Process; got != want {
		t.Errorf("Status().Process is %q before any lease, want %q", got, want)
	}
	if got := tasks.DefaultProcess("billing"); got != "billing@"+want {
		t.Errorf("DefaultProcess(billing) = %q, want %q", got, "billing@"+want)
	}
	for _, app := range []string{strings.Repeat("é", tasks.MaxProcessLen), " a\x00b\xff\n ", "\t"} {
		got := tasks.DefaultProcess(app)
		if !strings.HasSuffix(got, want) || len(got) > tasks.MaxProcessLen || !utf8.ValidString(got) {
			t.Errorf("DefaultProcess(%q) = %q, want at most %d bytes of text ending %q", app, got, tasks.MaxProcessLen, want)
		}
		if err := (tasks.Config{Process: got}).Validate(); err != nil {
			t.Errorf("DefaultProcess(%q) = %q, refused: %v", app, got, err)
		}
	}
}

// A process name Validate refuses is named in the error, by New too.
func TestProcessValidation(t *testing.T) {
	t.Parallel()
	for _, name := range []string{strings.Repeat("p", tasks.MaxProcessLen+1), "a\xffb", "line\nbreak", "nul\x00", " padded", "padded\u00a0"} {
		err := tasks.Config{Process: name}.Validate()
		if !errors.Is(err, supervisor.ErrInvalidConfig) || !strings.Contains(err.Error(), "process:") {
			t.Errorf("process %q: %v, want an error naming process", name, err)
		}
		_, err = tasks.New("q", tasks.Config{Process: name}, nil, tasks.HandlerFunc(func(context.Context, *tasks.Task) error { return nil }))
		if !errors.Is(err, supervisor.ErrInvalidConfig) || !strings.Contains(err.Error(), "process:") {
			t.Errorf("New with process %q: %v, want an error naming process", name, err)
		}
	}
	for _, name := range []string{"", strings.Repeat("é", tasks.MaxProcessLen/2), "billing@host-1/42", "a b"} {
		if err := (tasks.Config{Process: name}).Validate(); err != nil {
			t.Errorf("process %q: %v", name, err)
		}
	}
}

// CheckTask counts the process name at its longest: the largest task it
// takes with an id whose claim is the largest write (every byte of the
// id is three in the record's subject) is claimed and run by a worker
// whose name is MaxProcessLen bytes long.
func TestLargestClaimWithTheLongestProcess(t *testing.T) {
	t.Parallel()
	srv := natstest.RunServer(t)
	nc := natstest.Connect(t, srv.URL())
	id := strings.Repeat("é", tasks.MaxIDLen/2)
	var tooLarge *tasks.TooLargeError
	if err := tasks.CheckTask("q", taskMsg(id, make([]byte, 1<<20)), nc.MaxPayload()); !errors.As(err, &tooLarge) {
		t.Fatalf("CheckTask of 1 MiB: %v, want a *TooLargeError", err)
	}
	own := tooLarge.Size - 1<<20 // the task's headers: its id
	data := make([]byte, tooLarge.Limit-own)
	if err := tasks.CheckTask("q", taskMsg(id, data), nc.MaxPayload()); err != nil {
		t.Fatalf("CheckTask at the limit it gave: %v", err)
	}
	rec := natstest.NewRecorder()
	done := newLedger()
	cfg := childConfig
	cfg.Process = strings.Repeat("p", tasks.MaxProcessLen)
	startWorker(t, srv.URL(), "q", cfg, tasks.HandlerFunc(func(_ context.Context, task *tasks.Task) error {
		done.complete(task.ID())
		return nil
	}), rec)
	publishTask(t, nc, id, data)
	ended := func() bool { c, _ := done.counts(); return c == 1 || len(natstest.All[tasks.DeadLettered](rec)) > 0 }
	natstest.Eventually(t, 30*time.Second, ended, func() string { return "the task neither ran nor ended" })
	if dl := natstest.All[tasks.DeadLettered](rec); len(dl) > 0 {
		t.Fatalf("the task was dead-lettered: %+v", dl)
	}
}
