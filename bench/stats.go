package main

import (
	"math"
	"slices"
	"time"
)

// stalled: a round slower than 0.3x the median points at a pull or
// heartbeat problem; it is reported, not averaged away.
func stalled(v, med float64, lower bool) bool {
	if lower {
		return med > 0 && v > med/0.3
	}
	return v < 0.3*med
}

// pairRatios is corral against other round by round: how many times
// better Corral is, > 1 always good.
func pairRatios(corral, other []float64, lower bool) []float64 {
	out := make([]float64, 0, len(corral))
	for i := range min(len(corral), len(other)) {
		c, o := corral[i], other[i]
		switch {
		case lower && c > 0:
			out = append(out, o/c)
		case !lower && o > 0:
			out = append(out, c/o)
		case lower: // Corral took no time at all
			out = append(out, math.Inf(1))
		default:
			out = append(out, 0)
		}
	}
	return out
}

func percentiles(lat []time.Duration) (p50, p99 float64) {
	s := slices.Clone(lat)
	slices.Sort(s)
	at := func(q float64) float64 {
		i := min(int(q*float64(len(s))), len(s)-1)
		return float64(s[i]) / float64(time.Microsecond)
	}
	return at(0.50), at(0.99)
}

func median(v []float64) float64 {
	if len(v) == 0 {
		return 0
	}
	s := slices.Clone(v)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}
