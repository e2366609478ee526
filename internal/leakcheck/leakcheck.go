package leakcheck

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/corral-go/corral/internal/backoff"
)

// Patience is how long the check waits for goroutines to exit before it
// calls them leaked. It looks again after 1µs, then twice as long each
// time, at most every 100ms, as goleak does; goleak gives up after 20
// looks (about 0.43s), which a goroutine still closing its connection on
// a loaded machine can outlast.
const Patience = 3 * time.Second

// maxDelay is the longest wait between two looks.
const maxDelay = 100 * time.Millisecond

// VerifyTestMain runs the package's tests (m.Run) and exits with their
// code. When they passed, it then looks for goroutines still running
// after [Patience], ignoring those the package comment lists and those
// with one of ignoreTop on top of their stack; if it finds any, it prints
// each one's state and stack to stderr and exits 1.
func VerifyTestMain(m *testing.M, ignoreTop ...string) {
	os.Exit(verify(m.Run, os.Stderr, Patience, ignoreTop))
}

// verify is VerifyTestMain with its test run, its output and its
// patience given, returning the exit code.
func verify(run func() int, stderr io.Writer, patience time.Duration, ignoreTop []string) int {
	if code := run(); code != 0 {
		return code
	}
	if leaked := find(patience, ignoreTop); len(leaked) > 0 {
		fmt.Fprintf(stderr, "leakcheck: the tests passed, but %s", describe(leaked, patience))
		return 1
	}
	return 0
}

// Find returns an error describing every goroutine still running after
// [Patience], other than those the package comment lists and those with
// one of ignoreTop on top of their stack, or nil as soon as there is none.
// It must not run in parallel with other tests.
func Find(ignoreTop ...string) error {
	if leaked := find(Patience, ignoreTop); len(leaked) > 0 {
		return errors.New("leakcheck: " + describe(leaked, Patience))
	}
	return nil
}

// find looks for leaked goroutines until there are none or patience has
// passed, and returns those of the last look.
func find(patience time.Duration, ignoreTop []string) []goroutine {
	deadline := time.Now().Add(patience)
	for attempt := 0; ; attempt++ {
		leaked := leaks(ignoreTop)
		left := time.Until(deadline)
		if len(leaked) == 0 || left <= 0 {
			return leaked
		}
		time.Sleep(min(backoff.Doubling(time.Microsecond, maxDelay, attempt), left))
	}
}

// leaks lists the goroutines running now, other than the caller and
// those ignored.
func leaks(ignoreTop []string) []goroutine {
	all := goroutines()
	var leaked []goroutine
	// runtime.Stack lists the calling goroutine first.
	for _, g := range all[min(1, len(all)):] {
		if !g.ignored(ignoreTop) {
			leaked = append(leaked, g)
		}
	}
	return leaked
}

// describe says what leaked: how many goroutines, then each one's state,
// top function and stack.
func describe(leaked []goroutine, patience time.Duration) string {
	var b strings.Builder
	noun := "goroutines"
	if len(leaked) == 1 {
		noun = "goroutine"
	}
	fmt.Fprintf(&b, "found %d unexpected %s still running after %v:\n", len(leaked), noun, patience)
	for _, g := range leaked {
		fmt.Fprintf(&b, "\nGoroutine %s in state %s, with %s on top of the stack:\n%s", g.id, g.state, g.top, g.stack)
	}
	return b.String()
}
