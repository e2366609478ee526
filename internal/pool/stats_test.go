package pool

import (
	"testing"
	"time"
)

func TestHistogramBuckets(t *testing.T) {
	for _, v := range []uint64{0, 1, 7, 8, 9, 15, 16, 17, 1000, 123456789, 1 << 40, 1<<63 + 12345} {
		i := bucketOf(v)
		if lo, hi := lowerBound(i), lowerBound(i+1); v < lo || (i+1 < 64<<subBits && v >= hi) {
			t.Errorf("value %d in bucket %d = [%d, %d)", v, i, lo, hi)
		}
	}
}

func TestHistogramQuantiles(t *testing.T) {
	var h histogram
	for i := 1; i <= 1000; i++ {
		h.record(time.Duration(i)*time.Microsecond, 1)
	}
	l := h.snapshot()
	if l.Count != 1000 || l.Max != time.Millisecond {
		t.Fatalf("got %+v", l)
	}
	within := func(got, want time.Duration) bool {
		return got >= want*94/100 && got <= want*106/100
	}
	if !within(l.P50, 500*time.Microsecond) || !within(l.P99, 990*time.Microsecond) {
		t.Fatalf("quantiles: got p50 %v p99 %v", l.P50, l.P99)
	}
	if !within(l.Mean, 500500*time.Nanosecond) {
		t.Fatalf("mean: got %v", l.Mean)
	}
}

func TestHistogramAtBounds(t *testing.T) {
	var s Stats
	for i := 1; i <= 1000; i++ {
		s.latency.record(time.Duration(i)*time.Microsecond, 1)
	}
	s.latency.record(time.Hour, 1)
	bounds := []time.Duration{100 * time.Microsecond, 500 * time.Microsecond, time.Millisecond, time.Second}
	h := s.Histogram(bounds)
	if h.Count != 1001 || h.Sum != time.Hour+500500*time.Microsecond {
		t.Fatalf("got count %d sum %v", h.Count, h.Sum)
	}
	// A bucket is 1/8 of its power of two wide: the calls just under a
	// bound may be counted under the next one, never a call above it
	// under this one.
	for i, want := range []uint64{100, 500, 1000, 1000} {
		got := h.Buckets[i]
		if got > want || got < want-want/8-1 {
			t.Errorf("bucket %v: got %d, want %d (or up to an eighth fewer)", bounds[i], got, want)
		}
	}
	if h.Buckets[3] != 1000 {
		t.Errorf("bucket 1s: got %d, want 1000: the hour-long call is above it", h.Buckets[3])
	}
}
