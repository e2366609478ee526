package backoff

import (
	"math"
	"testing"
	"time"
)

// Doubling grows base to the limit and stays there, and never wraps to a
// shorter or negative delay however large the base, limit or count.
func TestDoubling(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		base, limit time.Duration
		n           int
		want        time.Duration
	}{
		{100 * time.Millisecond, 15 * time.Second, -1, 100 * time.Millisecond},
		{100 * time.Millisecond, 15 * time.Second, 0, 100 * time.Millisecond},
		{100 * time.Millisecond, 15 * time.Second, 1, 200 * time.Millisecond},
		{100 * time.Millisecond, 15 * time.Second, 7, 12800 * time.Millisecond},
		{100 * time.Millisecond, 15 * time.Second, 8, 15 * time.Second},
		{100 * time.Millisecond, 15 * time.Second, math.MaxInt, 15 * time.Second},
		{time.Second, time.Second, 5, time.Second},
		{20 * time.Second, 15 * time.Second, 0, 15 * time.Second},
		{0, time.Minute, 3, time.Minute},
		{-time.Second, time.Minute, 3, time.Minute},
		// A shift wraps here: (1<<40+1)<<30 is 1<<30.
		{1<<40 + 1, math.MaxInt64, 20, (1<<40 + 1) << 20},
		{1<<40 + 1, math.MaxInt64, 30, math.MaxInt64},
		{1<<40 + 1, math.MaxInt64, math.MaxInt, math.MaxInt64},
		{1<<40 + 1, 24 * time.Hour, 64, 24 * time.Hour},
		{1 << 62, math.MaxInt64, 1, math.MaxInt64},
		{1 << 61, math.MaxInt64, 1, 1 << 62},
		{math.MaxInt64 / 2, math.MaxInt64, 1, math.MaxInt64 - 1},
		{math.MaxInt64/2 + 1, math.MaxInt64, 1, math.MaxInt64},
		{math.MaxInt64, math.MaxInt64, 100, math.MaxInt64},
		{1, math.MaxInt64, 62, 1 << 62},
		{1, math.MaxInt64, 63, math.MaxInt64},
	} {
		if got := Doubling(tc.base, tc.limit, tc.n); got != tc.want {
			t.Errorf("Doubling(%d, %d, %d): got %d, want %d", tc.base, tc.limit, tc.n, got, tc.want)
		}
	}
	for _, base := range []time.Duration{1, 3, 1<<40 + 1, 24 * time.Hour, math.MaxInt64 / 3, math.MaxInt64} {
		for _, limit := range []time.Duration{base, 24 * time.Hour, math.MaxInt64 / 2, math.MaxInt64} {
			if limit < base {
				continue
			}
			prev := base
			for n := range 200 {
				got := Doubling(base, limit, n)
				if got < prev || got > limit {
					t.Fatalf("Doubling(%d, %d, %d): got %d, want in [%d, %d]", base, limit, n, got, prev, limit)
				}
				prev = got
			}
		}
	}
}

// AddSat adds without wrapping: a sum past either end of the durations is
// that end.
func TestAddSat(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		d, j, want time.Duration
	}{
		{time.Second, 500 * time.Millisecond, 1500 * time.Millisecond},
		{time.Second, 0, time.Second},
		{0, math.MaxInt64, math.MaxInt64},
		{1, math.MaxInt64, math.MaxInt64},
		{math.MaxInt64, 1, math.MaxInt64},
		{math.MaxInt64, math.MaxInt64, math.MaxInt64},
		{math.MaxInt64 - 1, 1, math.MaxInt64},
		{math.MaxInt64/2 + 1, math.MaxInt64 / 2, math.MaxInt64},
		{math.MaxInt64, -1, math.MaxInt64 - 1},
		{math.MinInt64, -1, math.MinInt64},
		{math.MinInt64, math.MinInt64, math.MinInt64},
		{-1, math.MinInt64, math.MinInt64},
		{math.MinInt64, math.MaxInt64, -1},
		{-time.Second, time.Second, 0},
	} {
		if got := AddSat(tc.d, tc.j); got != tc.want {
			t.Errorf("AddSat(%d, %d): got %d, want %d", tc.d, tc.j, got, tc.want)
		}
	}
}
