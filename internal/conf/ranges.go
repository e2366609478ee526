package conf

import (
	"math"
	"time"
)

// The ranges every package checks its numeric settings against. Each is
// generous for real use and small enough that the arithmetic done with a
// value (a few multiples of a duration, a channel allocated up front, a
// goroutine per worker) cannot overflow or exhaust memory.
const (
	// MaxDuration bounds a duration setting: ten years (87600h). Twenty-nine
	// times it still fits a time.Duration, so doubling, tripling or adding
	// jitter to one never wraps.
	MaxDuration = 10 * 365 * 24 * time.Hour
	// MaxPolicyDuration bounds the durations of a restart policy: a day. A
	// restart delay, backoff, failure decay or shutdown longer than that is
	// a mistake, and twice it (the most jitter adds) is far from overflow.
	MaxPolicyDuration = 24 * time.Hour
	// MaxWorkers bounds a worker pool: 65536 goroutines, at least 128MiB
	// of stacks between them.
	MaxWorkers = 1 << 16
	// MaxQueue bounds a task queue, a channel allocated up front:
	// 1048576 slots of a pointer each, 8MiB.
	MaxQueue = 1 << 20
	// MaxCount bounds a count the server keeps as a 32-bit number (max
	// deliveries, max ack pending, pending messages): math.MaxInt32.
	MaxCount = math.MaxInt32
)

// Between records a problem with field unless lo <= v <= hi.
func (p Problems) Between(field string, v, lo, hi int64) {
	if v < lo || v > hi {
		p.Addf(field, "must be between %d and %d, got %d", lo, hi, v)
	}
}

// Durations records a problem with each field of ds that is negative or
// longer than hi, and reports whether all of ds are in range.
func (p Problems) Durations(hi time.Duration, ds ...NamedDuration) bool {
	ok := true
	for _, d := range ds {
		if d.V < 0 || d.V > hi {
			p.Addf(d.Name, "must be between 0s and %v, got %v", hi, d.V)
			ok = false
		}
	}
	return ok
}

// NamedDuration is a duration setting and its field, for Durations.
type NamedDuration struct {
	Name string
	V    time.Duration
}
