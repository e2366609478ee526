package consumer

import (
	"sync"
	"time"

	"github.com/nats-io/nats.go"
)

// flusher coalesces the round trips of the handlers that subscribe at
// about the same time, as a Client's handlers do when it starts: one
// Flush answers for every subscription sent before its PING, where a
// thousand handlers flushing each cost a thousand writes and round trips.
type flusher struct {
	mu      sync.Mutex
	next    *flushRound // collecting callers; runs once the running round ends
	running bool
	rounds  int // flushes run, for tests
}

type flushRound struct {
	nc   *nats.Conn
	done chan struct{}
	err  error
}

// flush returns once the server has processed everything written to nc
// before the call, or with FlushTimeout's error. A caller that arrives
// while a round runs joins the next: what it wrote may have followed the
// running round's PING. The caller that finds no round running runs the
// rounds, its own and those that gather meanwhile.
func (f *flusher) flush(nc *nats.Conn, timeout time.Duration) error {
	f.mu.Lock()
	if f.next != nil && f.next.nc != nc {
		// A round on a connection replaced since: this caller's is alone.
		f.mu.Unlock()
		return nc.FlushTimeout(timeout)
	}
	if f.next == nil {
		f.next = &flushRound{nc: nc, done: make(chan struct{})}
	}
	mine := f.next
	if f.running {
		f.mu.Unlock()
		<-mine.done
		return mine.err
	}
	f.running = true
	for f.next != nil {
		r := f.next
		f.next = nil
		f.rounds++
		f.mu.Unlock()
		r.err = r.nc.FlushTimeout(timeout)
		close(r.done)
		f.mu.Lock()
	}
	f.running = false
	f.mu.Unlock()
	return mine.err
}
