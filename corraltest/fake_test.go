package corraltest_test

import (
	"context"
	"fmt"
	"os"
	"runtime"
	"strings"
	"sync"
	"testing"
)

// fakeT stands in for the *testing.T of a test run inside another test or
// an Example, which has none: it runs the test in a goroutine, as testing
// does, so that Fatalf ends it; it keeps what the test reported, and runs
// its cleanups in reverse order when the test ends. It implements what
// the Kit calls (Helper, Cleanup, TempDir, Errorf, Fatalf) and Context,
// Fatal, Error, Log and Logf; any other method of testing.TB panics, as the nil
// TB it embeds (for testing.TB's unexported method) has none.
type fakeT struct {
	testing.TB

	ctx    context.Context // cancelled when the test returns, before cleanups
	cancel context.CancelFunc

	mu       sync.Mutex
	cleanups []func()
	reports  []string
	failed   bool
	dir      string
}

// runTest runs test as a test of its own and returns what it reported
// (its errors and logs) and whether it failed.
func runTest(test func(t testing.TB)) (reports []string, failed bool) {
	t := &fakeT{}
	t.ctx, t.cancel = context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		test(t)
	}()
	<-done
	t.cancel()
	t.mu.Lock()
	cleanups := t.cleanups
	t.mu.Unlock()
	for i := len(cleanups) - 1; i >= 0; i-- {
		t.runCleanup(cleanups[i])
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.reports, t.failed
}

// runCleanup runs f in a goroutine of its own, so that a Fatalf in it
// ends only it.
func (t *fakeT) runCleanup(f func()) {
	done := make(chan struct{})
	go func() {
		defer close(done)
		f()
	}()
	<-done
}

func (t *fakeT) Helper() {}

func (t *fakeT) Context() context.Context { return t.ctx }

func (t *fakeT) Cleanup(f func()) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.cleanups = append(t.cleanups, f)
}

// TempDir returns one directory, made at the first call and removed by a
// cleanup registered then, as testing's is.
func (t *fakeT) TempDir() string {
	t.mu.Lock()
	dir := t.dir
	t.mu.Unlock()
	if dir != "" {
		return dir
	}
	dir, err := os.MkdirTemp("", "corraltest")
	if err != nil {
		t.Fatalf("TempDir: %v", err)
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	t.dir = dir
	t.cleanups = append(t.cleanups, func() { _ = os.RemoveAll(dir) })
	return dir
}

func (t *fakeT) report(fail bool, msg string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.reports = append(t.reports, strings.TrimSuffix(msg, "\n"))
	t.failed = t.failed || fail
}

func (t *fakeT) Logf(format string, args ...any)   { t.report(false, fmt.Sprintf(format, args...)) }
func (t *fakeT) Log(args ...any)                   { t.report(false, fmt.Sprintln(args...)) }
func (t *fakeT) Errorf(format string, args ...any) { t.report(true, fmt.Sprintf(format, args...)) }
func (t *fakeT) Error(args ...any)                 { t.report(true, fmt.Sprintln(args...)) }

func (t *fakeT) Fatalf(format string, args ...any) {
	t.report(true, fmt.Sprintf(format, args...))
	runtime.Goexit()
}

func (t *fakeT) Fatal(args ...any) {
	t.report(true, fmt.Sprintln(args...))
	runtime.Goexit()
}

func (t *fakeT) Failed() bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.failed
}

// runExample runs test as runTest does and prints each report, so that an
// Example's output shows a failure.
func runExample(test func(t testing.TB)) {
	reports, failed := runTest(test)
	for _, r := range reports {
		fmt.Println("report:", r)
	}
	if failed {
		fmt.Println("FAIL")
	}
}
