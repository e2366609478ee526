// Package backoff computes growing waits without overflow: a delay
// doubled per attempt up to a limit, and a jitter added to it, neither of
// which wraps to a short or negative duration however large the settings
// or the attempt count.
package backoff

import (
	"context"
	"math"
	"time"
)

// Doubling returns base doubled n times (none for n <= 0), at most limit.
// It doubles step by step and stops at the limit, so it never wraps as a
// shift does ((1<<40+1)<<30 is 1<<30); a base that is not positive, or a
// doubling that would pass the largest duration, gives limit.
func Doubling(base, limit time.Duration, n int) time.Duration {
	d := base
	for i := 0; i < n && d > 0 && d < limit; i++ {
		if d > math.MaxInt64/2 {
			return limit
		}
		d *= 2
	}
	if d <= 0 || d > limit {
		return limit
	}
	return d
}

// AddSat returns d+j, saturating at the largest and smallest durations
// instead of wrapping: a jitter added to a long wait never makes it
// negative.
func AddSat(d, j time.Duration) time.Duration {
	switch {
	case j > 0 && d > math.MaxInt64-j:
		return math.MaxInt64
	case j < 0 && d < math.MinInt64-j:
		return math.MinInt64
	}
	return d + j
}

// Wait waits d, or until ctx ends: then it returns ctx's error.
func Wait(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}
