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
		h.record(time.Duration(i) * time.Microsecond)
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
