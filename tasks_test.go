package corral_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/corral-go/corral"
	"github.com/corral-go/corral/internal/natstest"
	"github.com/corral-go/corral/publisher"
	"github.com/corral-go/corral/supervisor"
	"github.com/corral-go/corral/tasks"
)

// A queue declared in the configuration takes tasks through the Client's
// publisher, and the Client's worker runs each once.
func TestTasksThroughTheClient(t *testing.T) {
	t.Parallel()
	cfg := embeddedConfig(t)
	parsed, err := corral.ParseConfig([]byte(`
tasks:
  render: {max_concurrency: 4, heartbeat: 300ms, lease_ttl: 1s, claim_wait: 1s, keep_completed: 1m}
`))
	if err != nil {
		t.Fatal(err)
	}
	cfg.Tasks = parsed.Tasks
	c, err := corral.New(cfg, embeddedServer)
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	ran := map[string]int{}
	if err := c.HandleTasks("render", tasks.Config{}, tasks.HandlerFunc(func(ctx context.Context, task *tasks.Task) error {
		mu.Lock()
		defer mu.Unlock()
		ran[string(task.Data())]++
		return nil
	})); err != nil {
		t.Fatal(err)
	}
	if err := c.HandleTasks("render", tasks.Config{}, tasks.HandlerFunc(func(context.Context, *tasks.Task) error { return nil })); !errors.Is(err, corral.ErrDuplicateWorker) {
		t.Fatalf("a second worker of one queue: %v, want ErrDuplicateWorker", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := c.Enqueue(ctx, "nope", nil); !errors.Is(err, corral.ErrUnknownQueue) {
		t.Fatalf("Enqueue to an undeclared queue: %v, want ErrUnknownQueue", err)
	}
	if _, err := c.Enqueue(ctx, "render", nil, publisher.WithMsgID(tasks.ReservedMsgIDPrefix+"put-back:job-1:1")); !errors.Is(err, tasks.ErrReservedMsgID) {
		t.Fatalf("Enqueue with a reserved Msg-Id: %v, want ErrReservedMsgID", err)
	}
	running(t, c)
	const n = 20
	for i := range n {
		f, err := c.Enqueue(ctx, "render", []byte(fmt.Sprint(i)), publisher.WithMsgID(fmt.Sprintf("job-%d", i)))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := f.Wait(ctx); err != nil {
			t.Fatal(err)
		}
	}
	w, ok := c.Worker("render")
	if !ok {
		t.Fatal("no worker for render")
	}
	natstest.Eventually(t, 30*time.Second, func() bool { return w.Status().Counters.Completed == n }, func() string {
		return c.Status().String()
	})
	mu.Lock()
	for i := range n {
		if got := ran[fmt.Sprint(i)]; got != 1 {
			t.Errorf("task %d ran %d times", i, got)
		}
	}
	mu.Unlock()
	st := c.Status()
	if len(st.Tasks) != 1 || st.Tasks[0].Queue != "render" || st.Tasks[0].Lease != tasks.LeaseStateHeld || st.Tasks[0].Capacity != 4 {
		t.Fatalf("task status: %+v", st.Tasks)
	}
	if tree := st.String(); !strings.Contains(tree, "tasks") || !strings.Contains(tree, "render") || !strings.Contains(tree, "completed=20") {
		t.Fatalf("status tree lacks the worker:\n%s", tree)
	}
}

// A Client's worker given no process name goes by the Client's name, the
// host and the pid; one the file gives wins, and one Validate refuses is
// named by its path.
func TestTaskWorkerProcessDefault(t *testing.T) {
	t.Parallel()
	cfg := embeddedConfig(t)
	cfg.Name = "billing"
	parsed, err := corral.ParseConfig([]byte(`
tasks:
  render: {}
  mail: {process: mailer-7}
`))
	if err != nil {
		t.Fatal(err)
	}
	cfg.Tasks = parsed.Tasks
	c, err := corral.New(cfg, embeddedServer)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close() // never run
	nop := tasks.HandlerFunc(func(context.Context, *tasks.Task) error { return nil })
	for _, q := range []string{"render", "mail"} {
		if err := c.HandleTasks(q, tasks.Config{}, nop); err != nil {
			t.Fatal(err)
		}
	}
	host := fmt.Sprint(os.Getpid())
	if name, err := os.Hostname(); err == nil {
		host = name + "/" + host
	}
	for q, want := range map[string]string{"render": "billing@" + host, "mail": "mailer-7"} {
		if w, _ := c.Worker(q); w.Status().Process != want {
			t.Errorf("queue %s: the worker's process is %q, want %q", q, w.Status().Process, want)
		}
	}
	// The tasks group joins the tree at Run: draw its status as it would.
	w, _ := c.Worker("render")
	st := corral.Status{Name: "billing", Children: []supervisor.ChildStatus{{Name: "tasks"}},
		Tasks: []corral.TaskStatus{{Status: w.Status()}}}
	if !strings.Contains(st.String(), " process=billing@"+host+" ") {
		t.Errorf("the status tree does not show the process:\n%s", st)
	}
	cfg.Tasks = map[string]tasks.Config{"render": {Process: "a\nb"}}
	if err := cfg.Validate(); !errors.Is(err, corral.ErrInvalidConfig) || !strings.Contains(err.Error(), "tasks.render.process:") {
		t.Errorf("a process with a line break: %v, want an error naming tasks.render.process", err)
	}
}
