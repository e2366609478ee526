package publisher

import (
	"errors"
	"testing"
	"time"
)

// The wait before a retry is RetryWait doubled per failure, up to
// MaxRetryWait, and stays there however long RetryWait and however many
// the failures: a shift wrapped, so that a 1099s wait became 1s after
// thirty failures (internal/backoff tests the doubling alone).
func TestRetryWaitNeverWraps(t *testing.T) {
	t.Parallel()
	const wait, maxWait = 1<<40 + 1, 24 * time.Hour
	p, err := New(Config{RetryWait: wait, MaxRetryWait: maxWait, MaxAttempts: -1}, nil)
	if err != nil {
		t.Fatal(err)
	}
	e := testEntry(1)
	p.mu.Lock()
	defer p.mu.Unlock()
	for n := 1; n <= 64; n++ {
		before := time.Now()
		if r := p.requeueLocked(e, errors.New("timeout"), false); r != queued {
			t.Fatalf("failure %d: %v, want queued", n, r)
		}
		p.retries = nil
		got := e.due.Sub(before)
		want := min(time.Duration(wait)<<min(n-1, 10), maxWait)
		if got < want || got > want+time.Minute {
			t.Fatalf("failure %d: waits %v, want %v", n, got, want)
		}
	}
}
