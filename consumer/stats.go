package consumer

import (
	"math/bits"
	"sync/atomic"
	"time"
)

// Counters are a handler's message counts since it was declared.
type Counters struct {
	// Received counts messages the subscription delivered.
	Received uint64
	// Processed counts handler calls that returned nil.
	Processed uint64
	// Failed counts handler calls that returned an error or panicked.
	Failed uint64
	// Panicked counts handler calls that panicked (also in Failed).
	Panicked uint64
	// Dropped counts messages dropped by the overflow policy, by nats.go
	// for a full pending buffer, or abandoned at shutdown.
	Dropped uint64
	// PendingDropped is the part of Dropped that nats.go dropped because
	// the subscription's pending buffer was full.
	PendingDropped uint64
	// Rejected counts requests answered "busy" by the reject policy.
	Rejected uint64
	// InFlight is the number of handler calls running now.
	InFlight int64
	// QueueDepth is the number of messages waiting for a worker now.
	QueueDepth int
	// Pending is, for core handlers, the number of messages nats.go holds
	// for the subscription, not yet handed to the queue; for JetStream
	// handlers, what the stream still holds for the consumer.
	Pending int

	// JetStream handlers only.
	// Acked, Naked and Terminated count how messages were settled; Naked
	// includes those handed back unstarted at shutdown.
	Acked, Naked, Terminated uint64
	// DeadLettered counts messages stored on the dead-letter subject and
	// terminated; DeadLetterFailed those whose copy could not be stored.
	DeadLettered, DeadLetterFailed uint64
	// Redelivered counts messages delivered more than once.
	Redelivered uint64
	// AckFailed counts acks that could not be sent or confirmed; those
	// messages will be redelivered.
	AckFailed uint64
	// InProgress counts in-progress acks sent for messages held long.
	InProgress uint64
	// PeakHeld is the most messages held at once (running and queued);
	// never more than workers + queue size.
	PeakHeld int64
}

// Latency summarizes how long handler calls took. Calls are sampled:
// every call of a handler slower than 20µs, one in eight of faster ones.
// Percentiles are read from a histogram with eight buckets per power of
// two, so they are within 6%.
type Latency struct {
	// Count is the number of calls sampled.
	Count uint64
	Mean  time.Duration
	P50   time.Duration
	P99   time.Duration
	Max   time.Duration
}

// counters is written by the subscription's goroutine (the input side)
// and by the workers (the output side); the two sides sit on separate
// cache lines so they do not slow each other down.
type counters struct {
	received, dropped, rejected atomic.Uint64
	// natsDropped is what nats.go dropped for subscriptions no longer in
	// use; the current one's count is read from it.
	natsDropped                 atomic.Uint64
	_                           [64]byte
	processed, failed, panicked atomic.Uint64
	inFlight                    atomic.Int64
	// JetStream settlement, written by the workers.
	acked, naked, terminated, deadLettered, deadLetterFailed atomic.Uint64
	redelivered, ackFailed, inProgress                       atomic.Uint64
	peakHeld                                                 atomic.Int64
	_                                                        [64]byte
	latency                                                  histogram
}

const subBits = 3 // 8 buckets per power of two

// histogram is a lock-free log-linear histogram of durations.
type histogram struct {
	buckets [64 << subBits]atomic.Uint64
	count   atomic.Uint64
	sum     atomic.Uint64
	max     atomic.Uint64
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

func (h *histogram) record(d time.Duration) {
	v := uint64(max(d, 0))
	h.buckets[bucketOf(v)].Add(1)
	h.count.Add(1)
	h.sum.Add(v)
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
	for i := range h.buckets {
		seen += h.buckets[i].Load()
		if seen > rank {
			mid := (lowerBound(i) + lowerBound(i+1)) / 2
			return min(time.Duration(mid), maxD)
		}
	}
	return maxD
}
