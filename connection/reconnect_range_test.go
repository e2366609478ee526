package connection

import (
	"math"
	"testing"
	"time"
)

// The reconnect delay never wraps, whatever the durations it is given:
// the jitter added to a long wait went negative, and nats.go reconnected
// at once in a loop.
func TestReconnectDelayNeverWraps(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		wait, maxWait, jitter time.Duration
	}{
		{math.MaxInt64, math.MaxInt64, math.MaxInt64},
		{1, math.MaxInt64, math.MaxInt64},
		{24 * time.Hour, 24 * time.Hour, 24 * time.Hour},
		{1<<40 + 1, math.MaxInt64 / 2, math.MaxInt64 / 2},
	} {
		delay := reconnectDelay(tc.wait, tc.maxWait, tc.jitter)
		for attempts := 1; attempts <= 100; attempts++ {
			d := delay(attempts)
			if want := min(tc.wait, tc.maxWait); d < want {
				t.Fatalf("%+v, round %d: got %v, want at least %v", tc, attempts, d, want)
			}
		}
	}
}
