package consumer

import (
	"sync"
	"sync/atomic"

	"github.com/nats-io/nats.go"
)

// upstream is where a handler's messages wait before they reach its pool:
// nats.go's pending buffer for a core subscription, the stream for a
// JetStream consumer.
type upstream interface {
	// refresh reads the figures again while they can be read.
	refresh()
	// pending is what waits upstream now.
	pending() int
	// pendingDropped is what nats.go dropped for a full pending buffer.
	pendingDropped() uint64
}

// subCounts is the upstream of a core handler: what nats.go holds and has
// dropped for the current subscription, read while nats.go still answers
// (it stops once the subscription is closed), and what it dropped for the
// subscriptions before it.
type subCounts struct {
	stats *counters
	mu    sync.Mutex // serializes reads and retirement of sub
	sub   atomic.Pointer[nats.Subscription]
	// The current subscription's counts as last read.
	lastDropped atomic.Int64
	lastPending atomic.Int64
	// blocked is 1 while a Block callback waits for room: nats.go counts
	// its message pending until the callback returns.
	blocked atomic.Int32
	// direct says the callback runs the handler (a direct run): the
	// message in flight is the one nats.go still counts.
	direct bool
}

// held is the message the callback holds that nats.go counts pending:
// one waiting for room, or one being handled.
func (s *subCounts) held() int {
	if s.direct {
		return int(s.stats.work.InFlight())
	}
	return int(s.blocked.Load())
}

func (s *subCounts) refresh() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if sub := s.sub.Load(); sub != nil {
		if d, err := sub.Dropped(); err == nil {
			s.lastDropped.Store(int64(d))
		}
		if n, _, err := sub.Pending(); err == nil {
			s.lastPending.Store(int64(n))
		}
	}
}

// pending is what nats.go holds for the current subscription, not yet
// handed to the queue.
func (s *subCounts) pending() int {
	s.refresh()
	// nats.go counts a message as pending until its callback returns.
	return max(int(s.lastPending.Load())-s.held(), 0)
}

func (s *subCounts) pendingDropped() uint64 {
	s.refresh()
	return s.stats.natsDropped.Load() + uint64(s.lastDropped.Load())
}

// use makes sub the current subscription.
func (s *subCounts) use(sub *nats.Subscription) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.sub.Store(sub)
	s.lastDropped.Store(0)
	s.lastPending.Store(0)
}

// retire stops reading the current subscription, keeping what nats.go
// dropped for it; what it still held is lost when lost is set (its
// connection closed), and counted dropped.
func (s *subCounts) retire(lost bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	sub := s.sub.Swap(nil)
	if sub == nil {
		return
	}
	if d, err := sub.Dropped(); err == nil {
		s.lastDropped.Store(int64(d))
	}
	s.stats.natsDropped.Add(uint64(s.lastDropped.Swap(0)))
	pending := max(s.lastPending.Swap(0)-int64(s.held()), 0)
	if lost {
		s.stats.dropped.Add(uint64(pending))
	}
}

// unread is what nats.go still holds for sub, which is not current any
// more or about to be unsubscribed: its messages will not be handled.
func (s *subCounts) unread(sub *nats.Subscription) uint64 {
	s.refresh()
	n, _, err := sub.Pending()
	if err != nil {
		return 0
	}
	return uint64(max(n-s.held(), 0))
}

// queue is where a handler's messages wait for a worker: its pool's
// queue, or for a direct run what nats.go holds (pendingQueue).
type queue interface {
	// Len is the number of messages waiting now.
	Len() int
	// Cap is the most that wait before the handler overflows.
	Cap() int
}

// pendingQueue is the queue of a direct run: the first size messages
// nats.go holds for the subscription, not counting the one being
// handled. As upstream, it is what nats.go holds beyond them.
type pendingQueue struct {
	sub  *subCounts
	size int
}

func (q *pendingQueue) Len() int { return min(q.sub.pending(), q.size) }

func (q *pendingQueue) Cap() int { return q.size }

func (q *pendingQueue) refresh() { q.sub.refresh() }

func (q *pendingQueue) pending() int { return max(q.sub.pending()-q.size, 0) }

func (q *pendingQueue) pendingDropped() uint64 { return q.sub.pendingDropped() }
