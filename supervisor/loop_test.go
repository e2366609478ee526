package supervisor_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/thejerf/suture/v4"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/corral-go/corral/internal/natstest"
	"github.com/corral-go/corral/supervisor"
)

// A failure past the threshold reads, in order: the failure (not
// restarting, no delay), the pause, its end, the next start.
func TestPauseEventOrder(t *testing.T) {
	for _, siblings := range []int{0, 1} {
		t.Run(fmt.Sprintf("siblings=%d", siblings), func(t *testing.T) {
			var mu sync.Mutex
			var seq []string
			resumed := make(chan struct{}, 1)
			hook := func(e supervisor.Event) {
				mu.Lock()
				defer mu.Unlock()
				switch e := e.(type) {
				case supervisor.ChildStarted:
					if e.Child == "flap" {
						seq = append(seq, fmt.Sprintf("started %d", e.Restarts))
					}
				case supervisor.ChildFailed:
					seq = append(seq, fmt.Sprintf("failed restarting=%v in=%v", e.Restarting, e.RestartIn))
				case supervisor.ChildBackoff:
					seq = append(seq, "backoff")
				case supervisor.ChildResumed:
					seq = append(seq, "resumed")
					resumed <- struct{}{}
				}
			}
			tree := supervisor.NewTree("t", supervisor.Events{Hook: hook})
			flap := &fn{name: "flap", serve: func(ctx context.Context, start int) error {
				if start <= 2 {
					return errBoom
				}
				return untilDone(ctx, start)
			}}
			p := supervisor.Policy{RestartDelay: time.Millisecond, FailureThreshold: 1.5, Backoff: 5 * time.Millisecond, Jitter: noJitter()}
			if err := tree.Add("flap", flap, p); err != nil {
				t.Fatal(err)
			}
			for i := range siblings {
				if err := tree.Add(fmt.Sprint("other", i), &fn{name: "other", serve: untilDone}, supervisor.Policy{}); err != nil {
					t.Fatal(err)
				}
			}
			stop := serve(t, tree)
			<-resumed
			natstest.Eventually(t, 10*time.Second, func() bool { return flap.starts.Load() == 3 }, func() string { return "no third start" })
			_ = stop()
			mu.Lock()
			defer mu.Unlock()
			want := []string{"started 0", "failed restarting=true in=1ms", "started 1",
				"failed restarting=false in=0s", "backoff", "resumed", "started 2"}
			if fmt.Sprint(seq) != fmt.Sprint(want) {
				t.Fatalf("events:\n got %q\nwant %q", seq, want)
			}
		})
	}
}

// A hook that panics is logged and goes no further: the tree runs on and
// stops cleanly, with one child or several.
func TestHookPanicIsReportedNotFatal(t *testing.T) {
	for _, n := range []int{1, 2} {
		t.Run(fmt.Sprintf("children=%d", n), func(t *testing.T) {
			core, logs := observer.New(zapcore.DebugLevel)
			var panicked atomic.Bool
			started := make(chan struct{}, n)
			hook := func(e supervisor.Event) {
				if e, ok := e.(supervisor.ChildStarted); ok {
					started <- struct{}{}
					if e.Child == "a" && panicked.CompareAndSwap(false, true) {
						panic("hook bug")
					}
				}
			}
			tree := supervisor.NewTree("t", supervisor.Events{Logger: zap.New(core), Hook: hook})
			for _, name := range []string{"a", "b"}[:n] {
				if err := tree.Add(name, &fn{name: name, serve: untilDone}, supervisor.Policy{}); err != nil {
					t.Fatal(err)
				}
			}
			stop := serve(t, tree)
			for range n {
				<-started
			}
			if err := stop(); !errors.Is(err, context.Canceled) || errors.Is(err, supervisor.ErrShutdownIncomplete) {
				t.Fatalf("Serve: got %v, want a clean stop", err)
			}
			lines := logs.FilterMessage("event hook or logger panicked").All()
			if len(lines) != 1 || lines[0].ContextMap()["panic"] != "hook bug" || lines[0].ContextMap()["event"] != "supervisor.child_started" {
				t.Fatalf("logged %v, want one line for the hook's panic", lines)
			}
			if len(logs.FilterMessage("supervisor.child_failed").All()) != 0 {
				t.Fatal("the hook's panic was counted as the child's failure")
			}
		})
	}
}

// A tree served again while the loop of a stop that overran has not
// returned is refused, even once the child's status reads stopped; once
// the loop returned, it serves.
func TestServeWhileTheLastLoopRunsIsRefused(t *testing.T) {
	inHook, releaseHook := make(chan struct{}), make(chan struct{})
	var once atomic.Bool
	hook := func(e supervisor.Event) {
		if _, ok := e.(supervisor.ChildStopped); ok && once.CompareAndSwap(false, true) {
			close(inHook)
			<-releaseHook
		}
	}
	tree := supervisor.NewTree("t", supervisor.Events{Hook: hook})
	running, overrun := make(chan struct{}, 2), make(chan struct{})
	child := &fn{name: "child", serve: func(ctx context.Context, start int) error {
		running <- struct{}{}
		<-ctx.Done()
		if start == 1 {
			<-overrun
		}
		return ctx.Err()
	}}
	if err := tree.Add("child", child, supervisor.Policy{ShutdownTimeout: 20 * time.Millisecond}); err != nil {
		t.Fatal(err)
	}
	stop := serve(t, tree)
	<-running
	if err := stop(); !errors.Is(err, supervisor.ErrShutdownIncomplete) {
		t.Fatalf("first Serve: got %v, want ErrShutdownIncomplete", err)
	}
	close(overrun)
	<-inHook // the service returned, its status reads stopped, its loop has not returned
	if st := tree.Status()[0]; st.State != supervisor.Stopped {
		t.Fatalf("status: %v, want stopped", st.State)
	}
	ended, cancel := context.WithCancel(context.Background())
	cancel()
	if err := tree.Serve(ended); !errors.Is(err, supervisor.ErrRunning) {
		t.Fatalf("Serve beside the last loop: got %v, want ErrRunning", err)
	}
	close(releaseHook)
	natstest.Eventually(t, 10*time.Second, func() bool {
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- tree.Serve(ctx) }()
		select {
		case <-done: // still refused
			cancel()
			return false
		case <-running:
			cancel()
			return errors.Is(<-done, context.Canceled)
		}
	}, func() string { return "never served again" })
	if got := child.starts.Load(); got != 2 {
		t.Fatalf("starts: %d, want 2", got)
	}
}

// A child that asks for the tree to end ends it: Serve returns its error
// once every other child has stopped, each within its timeout.
func TestTerminateStopsEveryChild(t *testing.T) {
	tree := supervisor.NewTree("t", supervisor.Events{})
	up, stopping, release := make(chan struct{}), make(chan struct{}), make(chan struct{})
	if err := tree.Add("slow", &fn{name: "slow", serve: func(ctx context.Context, _ int) error {
		close(up)
		<-ctx.Done()
		close(stopping)
		<-release // a stop that lasts until the test lets it end
		return ctx.Err()
	}}, supervisor.Policy{}); err != nil {
		t.Fatal(err)
	}
	if err := tree.Add("other", &fn{name: "other", serve: untilDone}, supervisor.Policy{}); err != nil {
		t.Fatal(err)
	}
	errBye := fmt.Errorf("bye: %w", suture.ErrTerminateSupervisorTree)
	if err := tree.Add("quit", &fn{name: "quit", serve: func(context.Context, int) error {
		<-up
		return errBye
	}}, supervisor.Policy{}); err != nil {
		t.Fatal(err)
	}
	served := make(chan error, 1)
	go func() { served <- tree.Serve(context.Background()) }()
	<-stopping
	select {
	case err := <-served:
		t.Fatalf("Serve returned (%v) while slow was still stopping", err)
	default:
	}
	close(release)
	if err := <-served; !errors.Is(err, errBye) || errors.Is(err, context.Canceled) {
		t.Fatalf("Serve: got %v, want the child's terminating error", err)
	}
	if u := tree.Unstopped(); len(u) != 0 {
		t.Fatalf("unstopped: %v", u)
	}
}
