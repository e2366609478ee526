package supervisor_test

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/corral-go/corral/internal/natstest"
	"github.com/corral-go/corral/supervisor"
)

// serveInline runs tree.ServeInline in the background; its stop function
// cancels it and returns what ServeInline returned.
func serveInline(t *testing.T, tree *supervisor.Tree) (stop func() error) {
	t.Helper()
	return background(t, tree.ServeInline)
}

// ServeInline applies the policy as Serve does: the child restarts after
// a failure, and ctx ending stops it.
func TestServeInlineRestartsTheChild(t *testing.T) {
	rec := natstest.NewRecorder()
	tree := supervisor.NewTree("t", supervisor.Events{Hook: rec.Hook})
	child := &fn{name: "child", serve: func(ctx context.Context, start int) error {
		if start == 1 {
			return errBoom
		}
		return untilDone(ctx, start)
	}}
	if err := tree.Add("child", child, supervisor.Policy{RestartDelay: time.Millisecond}); err != nil {
		t.Fatal(err)
	}
	stop := serveInline(t, tree)
	natstest.WaitFor[supervisor.ChildStarted](t, rec, 0, 10*time.Second, func(e supervisor.ChildStarted) bool { return e.Restarts == 1 })
	if err := tree.ServeInline(context.Background()); !errors.Is(err, supervisor.ErrRunning) {
		t.Fatalf("a second ServeInline: got %v, want ErrRunning", err)
	}
	if err := stop(); !errors.Is(err, context.Canceled) {
		t.Fatalf("ServeInline: got %v, want context.Canceled", err)
	}
	if st := tree.Status()[0]; st.State != supervisor.Stopped || st.Restarts != 1 {
		t.Fatalf("status: got %+v, want stopped after one restart", st)
	}
}

// AwaitStop bounds the wait for a child that ignores its stop, names it,
// and reports the timeout; one that stops is awaited in full; an ended
// ctx ends the wait without a verdict.
func TestAwaitStopBoundsTheWait(t *testing.T) {
	rec := natstest.NewRecorder()
	tree := supervisor.NewTree("t", supervisor.Events{Hook: rec.Hook})
	release := make(chan struct{})
	stubborn := &fn{name: "stubborn", serve: func(context.Context, int) error {
		<-release
		return nil
	}}
	if err := tree.Add("stubborn", stubborn, supervisor.Policy{ShutdownTimeout: 50 * time.Millisecond}); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	var served error
	go func() {
		defer close(done)
		served = tree.ServeInline(ctx)
	}()
	natstest.WaitFor[supervisor.ChildStarted](t, rec, 0, 10*time.Second, nil)
	cancel()
	since := time.Now()
	ended, end := context.WithCancel(context.Background())
	end()
	if err := tree.AwaitStop(ended, since, done); !errors.Is(err, context.Canceled) || len(tree.Unstopped()) != 0 {
		t.Fatalf("AwaitStop with an ended ctx: got %v and unstopped %v, want context.Canceled and none", err, tree.Unstopped())
	}
	if err := tree.AwaitStop(context.Background(), since, done); !errors.Is(err, supervisor.ErrShutdownIncomplete) {
		t.Fatalf("AwaitStop: the child ignored its stop, got %v, want ErrShutdownIncomplete", err)
	}
	if u := tree.Unstopped(); !slices.Equal(u, []string{"stubborn"}) {
		t.Fatalf("unstopped: got %v, want [stubborn]", u)
	}
	if ev, _ := natstest.WaitFor[supervisor.ChildStopTimeout](t, rec, 0, time.Second, nil); ev.Child != "stubborn" {
		t.Fatalf("got %+v", ev)
	}
	close(release)
	<-done
	if !errors.Is(served, context.Canceled) {
		t.Fatalf("ServeInline: got %v, want context.Canceled", served)
	}
	if err := tree.AwaitStop(context.Background(), time.Now(), done); err != nil {
		t.Fatalf("AwaitStop: the child has returned, got %v", err)
	}
}

// ServeInline needs a tree of exactly one child.
func TestServeInlineNeedsOneChild(t *testing.T) {
	tree := supervisor.NewTree("t", supervisor.Events{})
	if err := tree.ServeInline(context.Background()); err == nil {
		t.Fatal("ServeInline of an empty tree: got nil, want an error")
	}
}
