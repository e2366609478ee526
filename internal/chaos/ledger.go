package chaos

import (
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Ledger records what the workload attempted, what the stream
// acknowledged and what the handlers and the watcher saw, for the checker.
// Its methods are safe for concurrent use.
type Ledger struct {
	mu        sync.Mutex
	attempted map[string]struct{} // message ids handed to the publisher
	acked     map[string]uint64   // message id -> stream sequence
	failed    map[string]string   // message id -> the error its Future failed with
	processed map[string]int      // message id -> successful handler runs
	runs      int                 // handler runs, successful or not
	puts      map[uint64]string   // acknowledged KV revision -> key
	watched   map[uint64]int      // KV revision -> times the watcher saw it
	order     []string            // what the watcher saw out of revision order
	lastRev   uint64
	replies   int
	badReply  []string
	findings  []string // anything else that must not happen

	// When an order was last acknowledged and last processed (unix
	// nanoseconds): recovery is measured on orders, which flow at a steady
	// rate, not on tasks, which run for up to 300 ms each.
	lastAck, lastProcessed atomic.Int64
}

// storeMax raises v to n; many goroutines record, and the latest wins.
func storeMax(v *atomic.Int64, n int64) {
	for {
		old := v.Load()
		if n <= old || v.CompareAndSwap(old, n) {
			return
		}
	}
}

// isOrder reports whether id names an order rather than a task.
func isOrder(id string) bool { return strings.HasPrefix(id, "o-") }

// NewLedger returns an empty ledger.
func NewLedger() *Ledger {
	return &Ledger{attempted: map[string]struct{}{}, acked: map[string]uint64{}, failed: map[string]string{},
		processed: map[string]int{}, puts: map[uint64]string{}, watched: map[uint64]int{}}
}

// Attempt records a message handed to the publisher: an order ("o-")
// or a task ("t-").
func (l *Ledger) Attempt(id string) {
	l.mu.Lock()
	l.attempted[id] = struct{}{}
	l.mu.Unlock()
}

// Ack records a message's stream acknowledgement.
func (l *Ledger) Ack(id string, seq uint64, now time.Time) {
	l.mu.Lock()
	l.acked[id] = seq
	l.mu.Unlock()
	if isOrder(id) {
		storeMax(&l.lastAck, now.UnixNano())
	}
}

// Duplicate records a message the stream acknowledged as a duplicate of
// one it stored under the same Msg-Id: it is no new message, and is not
// expected to be stored or processed (the one it duplicates is).
func (l *Ledger) Duplicate(id string) {
	l.mu.Lock()
	delete(l.attempted, id)
	l.mu.Unlock()
}

// Fail records a message the publisher gave up on.
func (l *Ledger) Fail(id string, err error) {
	l.mu.Lock()
	l.failed[id] = err.Error()
	l.mu.Unlock()
}

// Run records one handler run of id, successful or not.
func (l *Ledger) Run(id string, ok bool, now time.Time) {
	l.mu.Lock()
	l.runs++
	if ok {
		l.processed[id]++
	}
	l.mu.Unlock()
	if ok && isOrder(id) {
		storeMax(&l.lastProcessed, now.UnixNano())
	}
}

// Put records a result write the bucket acknowledged.
func (l *Ledger) Put(key string, rev uint64) {
	l.mu.Lock()
	l.puts[rev] = key
	l.mu.Unlock()
}

// Watched records a revision the watcher delivered.
func (l *Ledger) Watched(key string, rev uint64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.watched[rev]++
	if rev <= l.lastRev {
		l.order = append(l.order, fmt.Sprintf("%s revision %d after %d", key, rev, l.lastRev))
	}
	l.lastRev = max(l.lastRev, rev)
}

// Reply records a request's answer: ok unless it is not what was asked.
func (l *Ledger) Reply(ok bool, detail string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if ok {
		l.replies++
		return
	}
	l.badReply = append(l.badReply, detail)
}

// Finding records something that must not happen, for the checker to
// report.
func (l *Ledger) Finding(format string, args ...any) {
	l.mu.Lock()
	l.findings = append(l.findings, fmt.Sprintf(format, args...))
	l.mu.Unlock()
}

// Progress reports when an order was last acknowledged and last
// processed (the zero time if never).
func (l *Ledger) Progress() (ack, processed time.Time) {
	return unixNano(l.lastAck.Load()), unixNano(l.lastProcessed.Load())
}

func unixNano(n int64) time.Time {
	if n == 0 {
		return time.Time{}
	}
	return time.Unix(0, n)
}

// Outstanding counts the acknowledged messages not yet processed and the
// acknowledged KV revisions the watcher has not seen.
func (l *Ledger) Outstanding() (unprocessed, unwatched int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for id := range l.acked {
		if l.processed[id] == 0 {
			unprocessed++
		}
	}
	for rev := range l.puts {
		if l.watched[rev] == 0 {
			unwatched++
		}
	}
	return unprocessed, unwatched
}
