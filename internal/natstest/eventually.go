package natstest

import (
	"testing"
	"time"
)

// Eventually polls cond every 5ms until it holds; once timeout has passed
// it fails the test with what describe returns. It is for state that no
// event announces (a counter, the server's view); wait on the event where
// there is one.
func Eventually(t testing.TB, timeout time.Duration, cond func() bool, describe func() string) {
	t.Helper()
	if cond() {
		return
	}
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-deadline.C:
			if cond() {
				return
			}
			t.Fatalf("not within %v: %s", timeout, describe())
		case <-tick.C:
			if cond() {
				return
			}
		}
	}
}
