package supervisor_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"

	"github.com/thejerf/suture/v4"

	"github.com/corral-go/corral/internal/natstest"
	"github.com/corral-go/corral/supervisor"
)

// fn is a service made of a function.
type fn struct {
	name   string
	starts atomic.Int32
	serve  func(ctx context.Context, start int) error
}

func (f *fn) String() string { return f.name }
func (f *fn) Serve(ctx context.Context) error {
	return f.serve(ctx, int(f.starts.Add(1)))
}

func untilDone(ctx context.Context, _ int) error { <-ctx.Done(); return ctx.Err() }

var errBoom = errors.New("boom")

func noJitter() *float64 { z := 0.0; return &z }

// serve runs tree in the background and returns a stop function that
// cancels it and returns Serve's error.
func serve(t *testing.T, tree *supervisor.Tree) (stop func() error) {
	t.Helper()
	return background(t, tree.Serve)
}

// background runs serveFn (a tree's Serve or ServeInline) on a context
// of its own; stop cancels it and returns what serveFn returned.
func background(t *testing.T, serveFn func(context.Context) error) (stop func() error) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- serveFn(ctx) }()
	var once sync.Once
	var err error
	stop = func() error {
		once.Do(func() {
			cancel()
			err = <-done
		})
		return err
	}
	t.Cleanup(func() { _ = stop() })
	return stop
}

func TestPermanentChildRestartsWithDoublingDelay(t *testing.T) {
	rec := natstest.NewRecorder()
	tree := supervisor.NewTree("t", supervisor.Events{Hook: rec.Hook})
	failing := &fn{name: "failing", serve: func(context.Context, int) error { return errBoom }}
	p := supervisor.Policy{RestartDelay: 10 * time.Millisecond, Backoff: time.Second, FailureThreshold: 100, Jitter: noJitter()}
	if err := tree.Add("failing", failing, p); err != nil {
		t.Fatal(err)
	}
	stop := serve(t, tree)

	var delays []time.Duration
	from := 0
	for range 5 {
		ev, i := natstest.WaitFor[supervisor.ChildFailed](t, rec, from, 10*time.Second, nil)
		if !errors.Is(ev.Err, errBoom) || ev.Child != "failing" || !ev.Restarting {
			t.Fatalf("got %+v, want a restarting failure of failing with errBoom", ev)
		}
		delays = append(delays, ev.RestartIn)
		from = i + 1
	}
	want := []time.Duration{10, 20, 40, 80, 160}
	for i := range want {
		want[i] *= time.Millisecond
	}
	if !slices.Equal(delays, want) {
		t.Fatalf("restart delays: got %v, want %v", delays, want)
	}
	if err := stop(); !errors.Is(err, context.Canceled) {
		t.Fatalf("Serve: got %v, want context.Canceled", err)
	}
	st := tree.Status()[0]
	if st.Restarts < 4 || st.LastError == "" || st.State != supervisor.Stopped {
		t.Fatalf("status: got %+v, want stopped with >= 4 restarts and a last error", st)
	}
}

func TestFlappingChildDoesNotRestartSiblings(t *testing.T) {
	rec := natstest.NewRecorder()
	tree := supervisor.NewTree("t", supervisor.Events{Hook: rec.Hook})
	siblingUp := make(chan struct{})
	sibling := &fn{name: "sibling", serve: func(ctx context.Context, start int) error {
		close(siblingUp)
		return untilDone(ctx, start)
	}}
	flapping := &fn{name: "flapping", serve: func(context.Context, int) error { return errBoom }}
	if err := tree.Add("sibling", sibling, supervisor.Policy{}); err != nil {
		t.Fatal(err)
	}
	if err := tree.Add("flapping", flapping, supervisor.Policy{
		RestartDelay: time.Millisecond, Backoff: time.Hour, FailureThreshold: 3, Jitter: noJitter(),
	}); err != nil {
		t.Fatal(err)
	}
	stop := serve(t, tree)

	<-siblingUp
	ev, _ := natstest.WaitFor[supervisor.ChildBackoff](t, rec, 0, 10*time.Second, nil)
	if ev.Child != "flapping" || ev.Backoff != time.Hour {
		t.Fatalf("got %+v, want flapping to back off for 1h", ev)
	}
	if got := flapping.starts.Load(); got < 3 {
		t.Fatalf("flapping started %d times, want >= 3 before backing off", got)
	}
	if got := sibling.starts.Load(); got != 1 {
		t.Fatalf("sibling started %d times, want 1", got)
	}
	byName := map[string]supervisor.ChildStatus{}
	for _, s := range tree.Status() {
		byName[s.Name] = s
	}
	if byName["flapping"].State != supervisor.BackingOff || byName["sibling"].State != supervisor.Running {
		t.Fatalf("status: got %+v", byName)
	}
	if err := stop(); !errors.Is(err, context.Canceled) {
		t.Fatalf("Serve: got %v", err)
	}
	for _, ev := range natstest.All[supervisor.ChildFailed](rec) {
		if ev.Child == "sibling" {
			t.Fatalf("sibling failed: %+v", ev)
		}
	}
}

func TestModes(t *testing.T) {
	tests := []struct {
		mode        supervisor.Mode
		result      error
		wantStarts  int32
		wantState   supervisor.State
		wantLastErr string
	}{
		{supervisor.Transient, nil, 1, supervisor.Stopped, ""},
		{supervisor.Transient, errBoom, 3, supervisor.Running, "boom"},
		{supervisor.Temporary, errBoom, 1, supervisor.Failed, "boom"},
		{supervisor.Temporary, nil, 1, supervisor.Stopped, ""},
		{supervisor.Permanent, nil, 3, supervisor.Running, "returned without error"},
		{supervisor.Permanent, suture.ErrDoNotRestart, 1, supervisor.Stopped, ""},
	}
	for _, tt := range tests {
		name := string(tt.mode) + "/nil"
		if tt.result != nil {
			name = string(tt.mode) + "/" + tt.result.Error()
		}
		t.Run(name, func(t *testing.T) {
			rec := natstest.NewRecorder()
			tree := supervisor.NewTree("t", supervisor.Events{Hook: rec.Hook})
			// It returns tt.result twice, then runs until stopped, so that a
			// restarted child is seen running.
			third := make(chan struct{})
			child := &fn{name: "child", serve: func(ctx context.Context, start int) error {
				if start <= 2 {
					return tt.result
				}
				close(third)
				return untilDone(ctx, start)
			}}
			if err := tree.Add("child", child, supervisor.Policy{Mode: tt.mode, RestartDelay: time.Millisecond}); err != nil {
				t.Fatal(err)
			}
			stop := serve(t, tree)
			if tt.wantStarts == 1 {
				ev, _ := natstest.WaitFor[supervisor.ChildStopped](t, rec, 0, 10*time.Second, nil)
				if tt.wantState == supervisor.Failed && !errors.Is(ev.Err, tt.result) || tt.wantState != supervisor.Failed && ev.Err != nil {
					t.Fatalf("ChildStopped error: got %v", ev.Err)
				}
			} else {
				select {
				case <-third:
				case <-time.After(10 * time.Second):
					t.Fatal("not restarted twice")
				}
			}
			st := tree.Status()[0]
			if got := child.starts.Load(); got != tt.wantStarts {
				t.Errorf("starts: got %d, want %d", got, tt.wantStarts)
			}
			if st.State != tt.wantState {
				t.Errorf("state: got %s, want %s", st.State, tt.wantState)
			}
			if !strings.Contains(st.LastError, tt.wantLastErr) || (tt.wantLastErr == "") != (st.LastError == "") {
				t.Errorf("last error: got %q, want %q", st.LastError, tt.wantLastErr)
			}
			_ = stop()
		})
	}
}

func TestPanicIsRecoveredWithStack(t *testing.T) {
	rec := natstest.NewRecorder()
	core, logs := observer.New(zap.DebugLevel)
	tree := supervisor.NewTree("t", supervisor.Events{Logger: zap.New(core), Hook: rec.Hook})
	child := &fn{name: "child", serve: func(ctx context.Context, start int) error {
		if start == 1 {
			panic("kaboom")
		}
		return untilDone(ctx, start)
	}}
	if err := tree.Add("child", child, supervisor.Policy{RestartDelay: time.Millisecond}); err != nil {
		t.Fatal(err)
	}
	stop := serve(t, tree)
	ev, _ := natstest.WaitFor[supervisor.ChildFailed](t, rec, 0, 10*time.Second, nil)
	var pe *supervisor.PanicError
	if !errors.As(ev.Err, &pe) || pe.Value != "kaboom" || !strings.Contains(string(pe.Stack), "tree_test.go") {
		t.Fatalf("got %#v, want a PanicError with the value and a stack through the test", ev.Err)
	}
	natstest.WaitFor[supervisor.ChildStarted](t, rec, 0, 10*time.Second, func(e supervisor.ChildStarted) bool { return e.Restarts == 1 })
	_ = stop()
	entries := logs.FilterMessage("supervisor.child_failed").All()
	if len(entries) != 1 {
		t.Fatalf("got %d child_failed log lines, want 1", len(entries))
	}
	fields := entries[0].ContextMap()
	if fields["child"] != "child" || !strings.Contains(fields["error"].(string), "kaboom") || fields["stack"] == nil {
		t.Fatalf("log fields: got %v, want child, error and stack", fields)
	}
}

func TestStopsInReverseOrderOfAdd(t *testing.T) {
	tree := supervisor.NewTree("t", supervisor.Events{})
	names := []string{"server", "connection", "consumers"}
	started, stopping := make(chan struct{}, len(names)), make(chan string, len(names))
	release := map[string]chan struct{}{}
	for _, name := range names {
		release[name] = make(chan struct{})
		child := &fn{name: name, serve: func(ctx context.Context, _ int) error {
			started <- struct{}{}
			<-ctx.Done()
			stopping <- name
			<-release[name] // held until the test has seen who else began stopping
			return ctx.Err()
		}}
		if err := tree.Add(name, child, supervisor.Policy{}); err != nil {
			t.Fatal(err)
		}
	}
	stop := serve(t, tree)
	for range names {
		<-started
	}
	stopped := make(chan error, 1)
	go func() { stopped <- stop() }()
	// consumers, then connection, then server, one after the other: while
	// one is held stopping, no other has begun.
	for i := len(names) - 1; i >= 0; i-- {
		if got := <-stopping; got != names[i] {
			t.Fatalf("%s began stopping, want %s", got, names[i])
		}
		select {
		case other := <-stopping:
			t.Fatalf("%s began stopping while %s was still stopping", other, names[i])
		default:
		}
		close(release[names[i]])
	}
	if err := <-stopped; !errors.Is(err, context.Canceled) {
		t.Fatalf("Serve: got %v", err)
	}
	if u := tree.Unstopped(); len(u) != 0 {
		t.Fatalf("unstopped: %v", u)
	}
}

func TestGroupStopsChildrenAtOnce(t *testing.T) {
	tree := supervisor.NewGroup("g", supervisor.Events{})
	release := make(chan struct{})
	started, stopping := make(chan struct{}, 2), make(chan string, 2)
	for _, name := range []string{"a", "b"} {
		child := &fn{name: name, serve: func(ctx context.Context, _ int) error {
			started <- struct{}{}
			<-ctx.Done()
			stopping <- name
			<-release // neither finishes until both have begun
			return ctx.Err()
		}}
		if err := tree.Add(name, child, supervisor.Policy{}); err != nil {
			t.Fatal(err)
		}
	}
	stop := serve(t, tree)
	for range 2 {
		<-started
	}
	done := make(chan error, 1)
	go func() { done <- stop() }()
	for range 2 {
		select {
		case <-stopping:
		case <-time.After(10 * time.Second):
			t.Fatal("the group's children did not begin stopping together")
		}
	}
	close(release)
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("Serve: got %v", err)
	}
}

func TestChildThatIgnoresStopIsReported(t *testing.T) {
	rec := natstest.NewRecorder()
	tree := supervisor.NewTree("t", supervisor.Events{Hook: rec.Hook})
	release, returned := make(chan struct{}), make(chan struct{})
	stubborn := &fn{name: "stubborn", serve: func(context.Context, int) error {
		defer close(returned)
		<-release
		return nil
	}}
	if err := tree.Add("stubborn", stubborn, supervisor.Policy{ShutdownTimeout: 50 * time.Millisecond}); err != nil {
		t.Fatal(err)
	}
	stop := serve(t, tree)
	natstest.WaitFor[supervisor.ChildStarted](t, rec, 0, 10*time.Second, nil)
	err := stop()
	close(release)
	<-returned
	if !errors.Is(err, supervisor.ErrShutdownIncomplete) || !errors.Is(err, context.Canceled) {
		t.Fatalf("Serve: got %v, want ErrShutdownIncomplete and context.Canceled", err)
	}
	if u := tree.Unstopped(); !slices.Equal(u, []string{"stubborn"}) {
		t.Fatalf("unstopped: got %v, want [stubborn]", u)
	}
	ev, _ := natstest.WaitFor[supervisor.ChildStopTimeout](t, rec, 0, time.Second, nil)
	if ev.Child != "stubborn" || ev.Timeout != 50*time.Millisecond {
		t.Fatalf("got %+v", ev)
	}
}

func TestServeAgainAndConcurrently(t *testing.T) {
	rec := natstest.NewRecorder()
	tree := supervisor.NewTree("t", supervisor.Events{Hook: rec.Hook})
	child := &fn{name: "child", serve: untilDone}
	if err := tree.Add("child", child, supervisor.Policy{}); err != nil {
		t.Fatal(err)
	}
	for round := range 2 {
		from := rec.Len()
		stop := serve(t, tree)
		natstest.WaitFor[supervisor.ChildStarted](t, rec, from, 10*time.Second, nil)
		if err := tree.Serve(context.Background()); !errors.Is(err, supervisor.ErrRunning) {
			t.Fatalf("round %d: concurrent Serve: got %v, want ErrRunning", round, err)
		}
		if err := tree.Add("late", child, supervisor.Policy{}); !errors.Is(err, supervisor.ErrRunning) {
			t.Fatalf("round %d: Add while serving: got %v, want ErrRunning", round, err)
		}
		_ = stop()
	}
	if got := child.starts.Load(); got != 2 {
		t.Fatalf("starts: got %d, want 2", got)
	}
}

func TestAddRejectsBadInput(t *testing.T) {
	tree := supervisor.NewTree("t", supervisor.Events{})
	child := &fn{name: "child", serve: untilDone}
	if err := tree.Add("child", child, supervisor.Policy{}); err != nil {
		t.Fatal(err)
	}
	if err := tree.Add("child", child, supervisor.Policy{}); !errors.Is(err, supervisor.ErrDuplicateChild) {
		t.Fatalf("duplicate: got %v", err)
	}
	err := tree.Add("other", child, supervisor.Policy{Mode: "forever"})
	if !errors.Is(err, supervisor.ErrInvalidConfig) || !strings.Contains(err.Error(), `"other"`) || !strings.Contains(err.Error(), "mode") {
		t.Fatalf("bad policy: got %v, want ErrInvalidConfig naming the child and mode", err)
	}
}
