package supervisor

import (
	"errors"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/corral-go/corral/internal/conf"
)

// Each numeric field out of its range is refused with an error naming it.
func TestPolicyRanges(t *testing.T) {
	nan := math.NaN()
	for _, tc := range []struct {
		field string
		p     Policy
	}{
		{"failure_threshold", Policy{FailureThreshold: -1}},
		{"failure_threshold", Policy{FailureThreshold: 1e7}},
		{"failure_threshold", Policy{FailureThreshold: nan}},
		{"failure_decay", Policy{FailureDecay: 25 * time.Hour}},
		{"failure_decay", Policy{FailureDecay: -time.Second}},
		{"restart_delay", Policy{RestartDelay: math.MaxInt64}},
		{"backoff", Policy{Backoff: math.MaxInt64 - 1}},
		{"backoff", Policy{Backoff: -1}},
		{"shutdown_timeout", Policy{ShutdownTimeout: 25 * time.Hour}},
		{"jitter", Policy{Jitter: &nan}},
	} {
		err := tc.p.Validate()
		if !errors.Is(err, conf.ErrInvalid) || !strings.Contains(err.Error(), tc.field) {
			t.Errorf("%+v: got %v, want an error naming %s", tc.p, err, tc.field)
		}
	}
	top := Policy{FailureThreshold: 1e6, FailureDecay: 24 * time.Hour, RestartDelay: 24 * time.Hour,
		Backoff: 24 * time.Hour, ShutdownTimeout: 24 * time.Hour}
	if err := top.Validate(); err != nil {
		t.Errorf("the top of every range: %v", err)
	}
}

// The jitter of a huge delay never wraps to a negative or shorter one: a
// backoff near the largest duration used to overflow, and the child
// restarted at once, 27 times in 3s.
func TestJitterNeverWraps(t *testing.T) {
	for _, d := range []time.Duration{math.MaxInt64, math.MaxInt64 - 1, math.MaxInt64 / 2, math.MaxInt64/2 + 1, 24 * time.Hour, 1, 0} {
		for _, r := range []float64{0, 0.5, 0.999999, 1} {
			j := jitter{frac: 1, rnd: func() float64 { return r }}
			if got := j.Jitter(d); got < d {
				t.Errorf("Jitter(%d) with draw %v: got %d, less than the delay", d, r, got)
			}
		}
	}
	if got := (jitter{frac: 0.5, rnd: func() float64 { return 1 }}).Jitter(10 * time.Second); got != 15*time.Second {
		t.Errorf("Jitter(10s) at the top of 0.5: got %v, want 15s", got)
	}
}

// The delay of restart n is RestartDelay doubled n-1 times, capped at
// Backoff (internal/backoff tests that the doubling never wraps).
func TestDelayDoublesToBackoff(t *testing.T) {
	p := Policy{RestartDelay: 100 * time.Millisecond, Backoff: 15 * time.Second}
	for n, want := range map[int]time.Duration{1: 100 * time.Millisecond, 2: 200 * time.Millisecond, 8: 12800 * time.Millisecond, 9: 15 * time.Second, 1000: 15 * time.Second} {
		if got := p.delay(n); got != want {
			t.Errorf("delay(%d): got %v, want %v", n, got, want)
		}
	}
}
