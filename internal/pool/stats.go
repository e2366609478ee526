package pool

import (
	"encoding/json"
	"math/bits"
	"sync/atomic"
	"time"

	"github.com/corral-go/corral/internal/conf"
)

// Stats counts what a pool's workers did: items handled, their outcomes
// and how long Handle took. Its zero value is ready to use; it is safe for
// concurrent use, and may outlive the pool that counts in it.
type Stats struct {
	processed, failed, panicked atomic.Uint64
	inFlight                    atomic.Int64
	latency                     histogram
}

// Processed is the number of items whose Handle returned nil.
func (s *Stats) Processed() uint64 { return s.processed.Load() }

// Failed is the number of items whose Handle returned an error or
// panicked.
func (s *Stats) Failed() uint64 { return s.failed.Load() }

// Handled is the number of items handled and settled: Processed + Failed.
func (s *Stats) Handled() uint64 { return s.processed.Load() + s.failed.Load() }

// Panicked is the number of panics recovered from Handle and Settle.
func (s *Stats) Panicked() uint64 { return s.panicked.Load() }

// InFlight is the number of items being handled or settled now.
func (s *Stats) InFlight() int64 { return s.inFlight.Load() }

// Latency summarizes how long Handle took, over the calls sampled.
func (s *Stats) Latency() Latency { return s.latency.snapshot() }

// Latency summarizes how long Handle calls took. Calls are sampled: every
// call of a handler slower than 20µs, one in eight of faster ones.
// Percentiles are read from a histogram with eight buckets per power of
// two, so they are within 6%.
type Latency struct {
	// Count estimates the calls: each sample counts for the calls it
	// stands for (eight for a sample of one in eight).
	Count uint64
	Mean  time.Duration
	P50   time.Duration
	P99   time.Duration
	Max   time.Duration
}

const subBits = 3 // 8 buckets per power of two

// histogram is a lock-free log-linear histogram of durations. Its 4 KiB
// of buckets are allocated at the first record: a thousand handlers that
// have handled nothing do not carry four megabytes of zeros.
type histogram struct {
	buckets atomic.Pointer[buckets]
	count   atomic.Uint64
	sum     atomic.Uint64
	max     atomic.Uint64
}

type buckets [64 << subBits]atomic.Uint64

// alloc returns the buckets, allocating them if no record has.
func (h *histogram) alloc() *buckets {
	if b := h.buckets.Load(); b != nil {
		return b
	}
	h.buckets.CompareAndSwap(nil, new(buckets))
	return h.buckets.Load()
}

func bucketOf(v uint64) int {
	if v < 1<<subBits {
		return int(v)
	}
	exp := bits.Len64(v) - 1 - subBits
	return (exp+1)<<subBits + int(v>>uint(exp))&(1<<subBits-1)
}

// lowerBound is the smallest value in bucket i; values in it are below
// lowerBound(i+1).
func lowerBound(i int) uint64 {
	if i < 1<<subBits {
		return uint64(i)
	}
	exp := i>>subBits - 1
	return (1<<subBits | uint64(i&(1<<subBits-1))) << uint(exp)
}

// record counts a call of duration d that stands for weight calls: a
// sample of one in eight stands for eight, so that counts and means are
// not biased towards the calls timed every time (the slow ones).
func (h *histogram) record(d time.Duration, weight uint64) {
	v := uint64(max(d, 0))
	h.alloc()[bucketOf(v)].Add(weight)
	h.count.Add(weight)
	h.sum.Add(v * weight)
	for {
		m := h.max.Load()
		if v <= m || h.max.CompareAndSwap(m, v) {
			return
		}
	}
}

func (h *histogram) snapshot() Latency {
	n := h.count.Load()
	if n == 0 {
		return Latency{}
	}
	l := Latency{Count: n, Mean: time.Duration(h.sum.Load() / n), Max: time.Duration(h.max.Load())}
	l.P50 = h.quantile(n, 0.50, l.Max)
	l.P99 = h.quantile(n, 0.99, l.Max)
	return l
}

func (h *histogram) quantile(n uint64, q float64, maxD time.Duration) time.Duration {
	rank := uint64(q * float64(n))
	var seen uint64
	bs := h.buckets.Load()
	if bs == nil {
		return maxD
	}
	for i := range bs {
		seen += bs[i].Load()
		if seen > rank {
			mid := (lowerBound(i) + lowerBound(i+1)) / 2
			return min(time.Duration(mid), maxD)
		}
	}
	return maxD
}

// Histogram is a cumulative histogram of the sampled Handle durations
// (see Latency) at chosen bounds: Buckets[i] counts the calls that took at
// most bounds[i]. A call is counted under the first bound at or above the
// top of its internal bucket, so it may be counted one bound late, never
// early.
type Histogram struct {
	Count   uint64
	Sum     time.Duration
	Buckets []uint64
}

// Histogram reads the latency histogram at bounds, which must ascend.
func (s *Stats) Histogram(bounds []time.Duration) Histogram {
	h := &s.latency
	out := Histogram{Buckets: make([]uint64, len(bounds))}
	b := 0
	var seen uint64
	if bs := h.buckets.Load(); bs != nil {
		for i := range bs {
			n := bs[i].Load()
			if n == 0 {
				continue
			}
			top := lowerBound(i+1) - 1 // the largest value bucket i holds
			for b < len(bounds) && uint64(max(bounds[b], 0)) < top {
				out.Buckets[b] = seen
				b++
			}
			seen += n
		}
	}
	for ; b < len(bounds); b++ {
		out.Buckets[b] = seen
	}
	// Count is the buckets' total, not h.count, so that the two agree
	// while calls are being recorded.
	out.Count, out.Sum = seen, time.Duration(h.sum.Load())
	return out
}

// latencyJSON is a Latency as JSON: its durations as Go durations.
type latencyJSON struct {
	Count               uint64
	Mean, P50, P99, Max conf.JSONDuration
}

// MarshalJSON writes l with its durations as Go durations ("1.2ms"), not
// as nanoseconds.
func (l Latency) MarshalJSON() ([]byte, error) {
	return json.Marshal(latencyJSON{Count: l.Count, Mean: conf.JSONDuration(l.Mean), P50: conf.JSONDuration(l.P50),
		P99: conf.JSONDuration(l.P99), Max: conf.JSONDuration(l.Max)})
}

// UnmarshalJSON reads what MarshalJSON writes.
func (l *Latency) UnmarshalJSON(b []byte) error {
	var j latencyJSON
	if err := json.Unmarshal(b, &j); err != nil {
		return err
	}
	*l = Latency{Count: j.Count, Mean: time.Duration(j.Mean), P50: time.Duration(j.P50), P99: time.Duration(j.P99), Max: time.Duration(j.Max)}
	return nil
}
