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
	running *flushRound // the round whose Flush is out
	next    *flushRound // gathering callers; starts once running ends
	rounds  int         // rounds run, for tests
}

type flushRound struct {
	nc      *nats.Conn
	started bool
	done    chan struct{}
	err     error
}

// flush returns once the server has processed everything written to nc
// before the call, or with FlushTimeout's error. A caller that arrives
// while a round runs joins the next one (what it wrote may have followed
// the running round's PING); once the running round ends, one of the
// next round's callers runs it, the others wait for it. No caller runs a
// round other than its own. A caller on another connection than a round
// it would wait for flushes alone.
func (f *flusher) flush(nc *nats.Conn, timeout time.Duration) error {
	f.mu.Lock()
	if f.running != nil && f.running.nc != nc || f.next != nil && f.next.nc != nc {
		f.mu.Unlock()
		return nc.FlushTimeout(timeout)
	}
	if f.next == nil {
		f.next = &flushRound{nc: nc, done: make(chan struct{})}
	}
	mine := f.next
	for f.running != nil && !mine.started {
		running := f.running
		f.mu.Unlock()
		<-running.done
		f.mu.Lock()
	}
	if mine.started { // another caller of the round runs it
		f.mu.Unlock()
		<-mine.done
		return mine.err
	}
	mine.started = true
	f.running, f.next = mine, nil
	f.rounds++
	f.mu.Unlock()
	mine.err = nc.FlushTimeout(timeout)
	// Cleared before done closes, so that the next round's callers find
	// no round running when they wake.
	f.mu.Lock()
	f.running = nil
	f.mu.Unlock()
	close(mine.done)
	return mine.err
}
