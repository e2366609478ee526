package supervisor_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/corral-go/corral/internal/natstest"
	"github.com/corral-go/corral/supervisor"
)

// fastRestarts restarts at once, never pausing.
func fastRestarts() supervisor.Policy {
	return supervisor.Policy{RestartDelay: time.Millisecond, Backoff: time.Millisecond, FailureThreshold: 1000, Jitter: noJitter()}
}

// A child that fails the same way at every restart logs one error for the
// episode, not one per restart, and its failures are counted as people
// count them: 1, 2, 3.
func TestRepeatedFailureLogsOneError(t *testing.T) {
	core, logs := observer.New(zapcore.DebugLevel)
	rec := natstest.NewRecorder()
	tree := supervisor.NewTree("t", supervisor.Events{Logger: zap.New(core), Hook: rec.Hook})
	const fails = 6
	failing := &fn{name: "failing", serve: func(ctx context.Context, start int) error {
		if start <= fails {
			return errBoom
		}
		return untilDone(ctx, start)
	}}
	if err := tree.Add("failing", failing, fastRestarts()); err != nil {
		t.Fatal(err)
	}
	stop := serve(t, tree)
	natstest.Eventually(t, 10*time.Second, func() bool { return failing.starts.Load() > fails }, func() string {
		return fmt.Sprintf("started %d times", failing.starts.Load())
	})
	if err := stop(); !errors.Is(err, context.Canceled) {
		t.Fatalf("Serve: %v", err)
	}
	var errorLines, failedLines int
	for _, e := range logs.All() {
		if e.Message == "supervisor.child_failed" {
			failedLines++
			if e.Level == zapcore.ErrorLevel {
				errorLines++
			}
			if n := e.ContextMap()["failures"]; fmt.Sprint(n) != fmt.Sprint(failedLines) {
				t.Fatalf("failure %d logged failures=%#v, want %d", failedLines, e.ContextMap()["failures"], failedLines)
			}
		}
		if e.Message == "supervisor.child_started" && e.Level > zapcore.InfoLevel {
			t.Fatalf("a restart logged at %v", e.Level)
		}
	}
	if failedLines != fails || errorLines != 1 {
		t.Fatalf("%d child_failed lines, %d at error; want %d, one at error", failedLines, errorLines, fails)
	}
	var info int
	for _, e := range logs.FilterMessage("supervisor.child_started").All() {
		if e.Level == zapcore.InfoLevel {
			info++
		}
	}
	if info != 1 {
		t.Fatalf("%d restarts logged at info, want 1 (the first)", info)
	}
}

// starter is a service that says when it has started.
type starter struct {
	fn
	started func()
}

func (s *starter) OnStarted(f func()) { s.started = f }

// serveStarter serves a Starter child named name, whose runs are run
// (given the child's started), until it has recovered recoveries times,
// and returns the tree's events.
func serveStarter(t *testing.T, name string, recoveries int, run func(ctx context.Context, started func(), start int) error) *natstest.Recorder {
	t.Helper()
	rec := natstest.NewRecorder()
	tree := supervisor.NewTree("t", supervisor.Events{Hook: rec.Hook})
	svc := &starter{}
	svc.fn = fn{name: name, serve: func(ctx context.Context, start int) error { return run(ctx, svc.started, start) }}
	if err := tree.Add(name, svc, fastRestarts()); err != nil {
		t.Fatal(err)
	}
	stop := serve(t, tree)
	natstest.Eventually(t, 10*time.Second, func() bool { return len(natstest.All[supervisor.ChildRecovered](rec)) == recoveries },
		func() string { return fmt.Sprintf("recoveries: %+v", natstest.All[supervisor.ChildRecovered](rec)) })
	if err := stop(); !errors.Is(err, context.Canceled) {
		t.Fatalf("Serve: %v", err)
	}
	return rec
}

// A Starter's episode ends when it says it has started: the next failure
// is reported at error again, even with the same error, and its failures
// are counted from 1; a different error is reported at error too.
func TestEpisodeEndsWhenAStarterStarts(t *testing.T) {
	errOther := errors.New("other")
	rec := serveStarter(t, "s", 2, func(ctx context.Context, started func(), start int) error {
		switch {
		case start <= 3: // episode 1: boom, boom, boom
			return errBoom
		case start == 4: // started, then boom: episode 2
			started()
			return errBoom
		case start <= 6: // boom, other
			if start == 6 {
				return errOther
			}
			return errBoom
		}
		started()
		return untilDone(ctx, start)
	})
	type got struct {
		failures, repeated int
		level              supervisor.Level
	}
	var gots []got
	for _, e := range natstest.All[supervisor.ChildFailed](rec) {
		gots = append(gots, got{e.Failures, e.Repeated, e.Level()})
	}
	E, D := supervisor.ErrorLevel, supervisor.DebugLevel
	want := []got{{1, 0, E}, {2, 1, D}, {3, 2, D}, {1, 0, E}, {2, 1, D}, {3, 0, E}}
	if fmt.Sprint(gots) != fmt.Sprint(want) {
		t.Fatalf("failures (count, repeated, level): got %v, want %v", gots, want)
	}
	for _, e := range natstest.All[supervisor.ChildRecovered](rec) {
		if e.Child != "s" || e.Failures != 3 {
			t.Fatalf("recovered: %+v, want s after 3 failures", e)
		}
	}
}

// Failures marked unavailable are one warning episode, whatever each
// says: the first is a warning, the others repeat it at debug, and the
// child's start ends the episode. A failure not so marked is an error.
func TestUnavailableIsOneWarningEpisode(t *testing.T) {
	noLeader := errors.New("no leader")
	rec := serveStarter(t, "w", 2, func(ctx context.Context, started func(), start int) error {
		switch start {
		case 1, 3:
			return supervisor.Unavailable(errBoom)
		case 2:
			return supervisor.Unavailable(noLeader)
		case 4: // started: the outage is over; then a failure of its own
			started()
			return errBoom
		}
		started()
		return untilDone(ctx, start)
	})
	var levels []supervisor.Level
	for _, e := range natstest.All[supervisor.ChildFailed](rec) {
		levels = append(levels, e.Level())
	}
	W, D, E := supervisor.WarnLevel, supervisor.DebugLevel, supervisor.ErrorLevel
	if want := []supervisor.Level{W, D, D, E}; fmt.Sprint(levels) != fmt.Sprint(want) {
		t.Fatalf("failure levels: got %v, want %v", levels, want)
	}
	if r := natstest.All[supervisor.ChildRecovered](rec)[0]; r.Failures != 3 {
		t.Fatalf("the outage recovered after %d failures, want 3", r.Failures)
	}
	if err := supervisor.Unavailable(nil); err != nil {
		t.Fatalf("Unavailable(nil) = %v", err)
	}
	if err := supervisor.Unavailable(errBoom); !errors.Is(err, errBoom) || err.Error() != errBoom.Error() {
		t.Fatalf("Unavailable(errBoom) = %v, want errBoom's text and to match it", err)
	}
}

// A quiet episode still says it goes on: each pause of a child failing the
// same way is a warning, however many repeats came before.
func TestPausesOfARepeatingFailureAreWarnings(t *testing.T) {
	core, logs := observer.New(zapcore.DebugLevel)
	tree := supervisor.NewTree("t", supervisor.Events{Logger: zap.New(core)})
	const fails = 4
	failing := &fn{name: "failing", serve: func(ctx context.Context, start int) error {
		if start <= fails {
			return errBoom
		}
		return untilDone(ctx, start)
	}}
	p := supervisor.Policy{RestartDelay: time.Millisecond, Backoff: time.Millisecond, FailureThreshold: 1, Jitter: noJitter()}
	if err := tree.Add("failing", failing, p); err != nil {
		t.Fatal(err)
	}
	stop := serve(t, tree)
	natstest.Eventually(t, 10*time.Second, func() bool { return failing.starts.Load() > fails }, func() string {
		return fmt.Sprintf("started %d times", failing.starts.Load())
	})
	if err := stop(); !errors.Is(err, context.Canceled) {
		t.Fatalf("Serve: %v", err)
	}
	pauses := logs.FilterMessage("supervisor.child_backoff").All()
	if len(pauses) < 2 {
		t.Fatalf("%d pauses logged, want one per failure past the threshold", len(pauses))
	}
	for i, e := range pauses {
		if e.Level != zapcore.WarnLevel {
			t.Fatalf("pause %d logged at %v, want warn", i+1, e.Level)
		}
	}
	// Every pause ended: the child ran again after each.
	if resumed := logs.FilterMessage("supervisor.child_resumed").Len(); resumed != len(pauses) {
		t.Fatalf("%d pauses, %d resumed", len(pauses), resumed)
	}
}
