package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/corral-go/corral"
	"github.com/corral-go/corral/internal/natstest"
	"github.com/corral-go/corral/tasks"
)

// client runs a corral.Client named name on url until the test ends or
// the returned stop is called; setup, if given, declares its worker of the
// task queue render first.
func client(t *testing.T, url, name string, setup func(*corral.Client) error) (c *corral.Client, stop func()) {
	t.Helper()
	cfg := corral.Config{Name: name}
	cfg.Connection.Servers = []string{url}
	if setup != nil {
		cfg.Tasks = map[string]tasks.Config{"render": {}}
	}
	c, err := corral.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if setup != nil {
		if err := setup(c); err != nil {
			t.Fatal(err)
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = c.Run(ctx)
	}()
	var once sync.Once
	stop = func() { once.Do(func() { cancel(); <-done }) }
	t.Cleanup(stop)
	rctx, rcancel := context.WithTimeout(ctx, 30*time.Second)
	defer rcancel()
	if err := c.Ready(rctx); err != nil {
		t.Fatal(err)
	}
	return c, stop
}

// corralCmd runs the built command with args and env (and a HOME of the
// test's own, so that no context of the machine's is read), and returns
// its output and exit code.
func corralCmd(t *testing.T, env []string, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Env = append([]string{"HOME=" + t.TempDir(), "PATH=" + os.Getenv("PATH")}, env...)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	var exit *exec.ExitError
	switch {
	case errors.As(err, &exit):
		code = exit.ExitCode()
	case err != nil:
		t.Fatalf("corral %v: %v", args, err)
	}
	return out.String(), errOut.String(), code
}

// ok runs the command, which must succeed, and decodes its --json output
// into v.
func ok(t *testing.T, v any, args ...string) {
	t.Helper()
	out, errOut, code := corralCmd(t, nil, append(args, "--json")...)
	if code != exitOK {
		t.Fatalf("corral %v: exit %d: %s", args, code, errOut)
	}
	if err := json.Unmarshal([]byte(out), v); err != nil {
		t.Fatalf("corral %v: %v in %s", args, err, out)
	}
}

// The command against three Clients of two services on one server: ps
// finds them all, and one service's alone; queues, tasks ls and show read
// the task queue two of them serve; cancel, pause and resume steer it;
// errors and exit codes are what a script can rely on.
func TestCommandAgainstAFleet(t *testing.T) {
	srv := natstest.RunServer(t)
	url := srv.URL()
	release := make(chan struct{})
	render := func(c *corral.Client) error {
		return c.HandleTasks("render", tasks.Config{MaxConcurrency: 2, Prefetch: -1}, tasks.HandlerFunc(
			func(ctx context.Context, task *tasks.Task) error {
				if err := task.Progress([]byte("rendering")); err != nil {
					return err
				}
				select {
				case <-release:
					return nil
				case <-ctx.Done():
					return ctx.Err()
				}
			}))
	}
	a, _ := client(t, url, "orders", render)
	client(t, url, "orders", render)
	_, stopBilling := client(t, url, "billing", nil)

	var ps []process
	ok(t, &ps, "ps", "-s", url)
	if len(ps) != 3 || ps[0].Service != "billing" || ps[1].Service != "orders" || ps[2].Service != "orders" {
		t.Fatalf("ps: %+v, want billing and two of orders", ps)
	}
	for _, p := range ps[1:] {
		if p.State != "ready" || len(p.Tasks) != 1 || p.Tasks[0].Queue != "render" || p.Tasks[0].Capacity != 2 || p.PID != os.Getpid() {
			t.Errorf("ps: %+v", p)
		}
	}
	out, _, code := corralCmd(t, []string{"NATS_URL=" + url}, "ps", "--name", "billing")
	if code != exitOK || !strings.Contains(out, "SERVICE") || !strings.Contains(out, "billing") || strings.Contains(out, "orders") {
		t.Fatalf("ps --name billing from NATS_URL: exit %d:\n%s", code, out)
	}

	// Six tasks: four run (two on each worker), two wait.
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	for i := range 6 {
		e, err := a.EnqueueTask(ctx, "render", []byte("frame"), tasks.WithID(fmt.Sprintf("frame-%d", i)))
		if err != nil {
			t.Fatal(err)
		}
		if err := e.Wait(ctx); err != nil {
			t.Fatal(err)
		}
	}
	var queues []queueRow
	natstest.Eventually(t, 30*time.Second, func() bool {
		ok(t, &queues, "queues", "-s", url)
		return len(queues) == 1 && queues[0].Counts.Running == 4 && queues[0].Counts.WaitingTotal() == 2
	}, func() string { return fmt.Sprintf("queues: %+v, want render with 4 running and 2 waiting", queues) })
	if q := queues[0]; q.Queue != "render" || q.Workers != 2 || q.Subject != "corral.tasks.render" {
		t.Fatalf("queues: %+v", q)
	}
	var running tasks.Page
	ok(t, &running, "tasks", "ls", "render", "--state", "running", "-s", url)
	if len(running.Tasks) != 4 || running.Next != 0 {
		t.Fatalf("tasks ls --state running: %+v", running)
	}
	var waiting tasks.Page
	ok(t, &waiting, "tasks", "ls", "-s", url, "render")
	if len(waiting.Tasks) != 2 {
		t.Fatalf("tasks ls: %+v, want the two waiting", waiting)
	}
	// Progress is written once a heartbeat.
	var info tasks.Info
	natstest.Eventually(t, 30*time.Second, func() bool {
		ok(t, &info, "tasks", "show", "render", running.Tasks[0].ID, "-s", url)
		return info.State == tasks.StateRunning && info.Process != "" && string(info.Progress) == "rendering"
	}, func() string { return fmt.Sprintf("tasks show: %+v", info) })
	out, _, code = corralCmd(t, nil, "tasks", "cancel", "render", waiting.Tasks[0].ID, "-s", url)
	if code != exitOK || !strings.Contains(out, "was waiting") {
		t.Fatalf("tasks cancel: exit %d: %s", code, out)
	}
	out, _, code = corralCmd(t, nil, "tasks", "delete", "render", waiting.Tasks[1].ID, "-s", url)
	if code != exitOK || !strings.Contains(out, "was waiting") {
		t.Fatalf("tasks delete: exit %d: %s", code, out)
	}
	_, errOut, code := corralCmd(t, nil, "tasks", "delete", "render", running.Tasks[0].ID, "-s", url)
	if code != exitFail || !strings.Contains(errOut, "not waiting") {
		t.Fatalf("tasks delete of a running task: exit %d: %s", code, errOut)
	}
	_, errOut, code = corralCmd(t, nil, "tasks", "show", "render", "no-such-task", "-s", url)
	if code != exitFail || !strings.Contains(errOut, "no task") {
		t.Fatalf("tasks show of an unknown task: exit %d: %s", code, errOut)
	}
	_, errOut, code = corralCmd(t, nil, "tasks", "ls", "nope", "-s", url)
	if code != exitFail || !strings.Contains(errOut, `no task queue "nope"`) {
		t.Fatalf("tasks ls of an unknown queue: exit %d: %s", code, errOut)
	}

	// Paused, then resumed.
	if _, errOut, code := corralCmd(t, nil, "pause", "render", "--for", "1h", "-s", url); code != exitOK {
		t.Fatalf("pause: exit %d: %s", code, errOut)
	}
	ok(t, &queues, "queues", "-s", url)
	if queues[0].Counts.PausedUntil.IsZero() {
		t.Fatalf("queues after the pause: %+v", queues[0])
	}
	if _, errOut, code := corralCmd(t, nil, "resume", "render", "-s", url); code != exitOK {
		t.Fatalf("resume: exit %d: %s", code, errOut)
	}
	ok(t, &queues, "queues", "-s", url)
	if !queues[0].Counts.PausedUntil.IsZero() {
		t.Fatalf("queues after the resume: %+v", queues[0])
	}
	close(release)

	// A stopped process no longer answers.
	stopBilling()
	ok(t, &ps, "ps", "-s", url)
	if len(ps) != 2 {
		t.Fatalf("ps after billing stopped: %+v", ps)
	}
}

// Connections come from the nats command's contexts: one named, or the
// one selected; a context that does not exist fails, naming it.
func TestCommandUsesContexts(t *testing.T) {
	srv := natstest.RunServer(t)
	client(t, srv.URL(), "orders", nil)
	cfg := t.TempDir()
	dir := filepath.Join(cfg, "nats", "context")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	ctxFile, _ := json.Marshal(map[string]string{"url": srv.URL()})
	if err := os.WriteFile(filepath.Join(dir, "local.json"), ctxFile, 0o600); err != nil {
		t.Fatal(err)
	}
	env := []string{"XDG_CONFIG_HOME=" + cfg}
	if out, errOut, code := corralCmd(t, env, "ps", "--context", "local"); code != exitOK || !strings.Contains(out, "orders") {
		t.Fatalf("ps --context local: exit %d: %s%s", code, out, errOut)
	}
	if err := os.WriteFile(filepath.Join(cfg, "nats", "context.txt"), []byte("local\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if out, errOut, code := corralCmd(t, env, "ps"); code != exitOK || !strings.Contains(out, "orders") {
		t.Fatalf("ps with local selected: exit %d: %s%s", code, out, errOut)
	}
	if _, errOut, code := corralCmd(t, env, "ps", "--context", "remote"); code != exitFail || !strings.Contains(errOut, `context "remote"`) {
		t.Fatalf("ps --context remote: exit %d: %s", code, errOut)
	}
}

// A command line the command does not understand exits 2 and says why;
// one it understands but cannot carry out exits 1; help exits 0.
func TestCommandExitCodes(t *testing.T) {
	for _, tt := range []struct {
		args []string
		code int
		says string
	}{
		{nil, exitUsage, "no command"},
		{[]string{"bogus"}, exitUsage, `unknown command "bogus"`},
		{[]string{"tasks", "ls"}, exitUsage, "takes 1 argument"},
		{[]string{"ps", "--bogus"}, exitUsage, "bogus"},
		{[]string{"tasks", "retry", "q", "--all"}, exitUsage, "--dead-letter"},
		{[]string{"help"}, exitOK, ""},
		{[]string{"ps", "-s", "nats://user:secret@127.0.0.1:1"}, exitFail, "connect to nats://127.0.0.1:1"},
	} {
		_, errOut, code := corralCmd(t, nil, tt.args...)
		if code != tt.code || !strings.Contains(errOut, tt.says) || strings.Contains(errOut, "secret") {
			t.Errorf("corral %v: exit %d, %q; want exit %d saying %q", tt.args, code, errOut, tt.code, tt.says)
		}
	}
}

// Against a leaf node whose Clients keep their queues in the hub's
// domain, the command finds them with --js-domain, or a context's
// jetstream_domain, and not without; a domain and a prefix together are
// a usage error.
func TestCommandReachesAnotherDomain(t *testing.T) {
	top := natstest.RunLeafNode(t)
	cfg := corral.Config{Name: "edge"}
	cfg.Connection.Servers = []string{top.Leaf.URL()}
	cfg.JetStreamAPI.Domain = "hub"
	cfg.Tasks = map[string]tasks.Config{"render": {}}
	c, err := corral.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	done := make(chan struct{})
	go func() { defer close(done); _ = c.Run(ctx) }()
	defer func() { cancel(); <-done }()
	if err := c.Ready(ctx); err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		e, err := c.EnqueueTask(ctx, "render", nil, tasks.WithID(fmt.Sprint("job-", i)))
		if err != nil {
			t.Fatal(err)
		}
		if err := e.Wait(ctx); err != nil {
			t.Fatal(err)
		}
	}
	var rows []queueRow
	ok(t, &rows, "queues", "-s", top.Leaf.URL(), "--js-domain", "hub")
	if len(rows) != 1 || rows[0].Queue != "render" || rows[0].Counts.WaitingTotal() != 3 {
		t.Errorf("queues --js-domain hub: %+v, want render with 3 waiting", rows)
	}
	rows = nil
	ok(t, &rows, "queues", "-s", top.Leaf.URL())
	if len(rows) != 0 {
		t.Errorf("queues in the leaf's own JetStream: %+v, want none", rows)
	}
	home := t.TempDir()
	dir := filepath.Join(home, "nats", "context")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	ctxFile, _ := json.Marshal(map[string]string{"url": top.Leaf.URL(), "jetstream_domain": "hub"})
	if err := os.WriteFile(filepath.Join(dir, "edge.json"), ctxFile, 0o600); err != nil {
		t.Fatal(err)
	}
	out, errOut, code := corralCmd(t, []string{"XDG_CONFIG_HOME=" + home}, "queues", "--context", "edge", "--json")
	if err := json.Unmarshal([]byte(out), &rows); code != exitOK || err != nil || len(rows) != 1 {
		t.Errorf("queues --context edge: exit %d, %v: %s%s", code, err, out, errOut)
	}
	_, errOut, code = corralCmd(t, nil, "queues", "-s", top.Leaf.URL(), "--js-domain", "hub", "--js-api-prefix", "JS.x.API")
	if code != exitUsage || !strings.Contains(errOut, "api_prefix") {
		t.Errorf("a domain and a prefix: exit %d: %s", code, errOut)
	}
}
