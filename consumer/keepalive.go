package consumer

import (
	"context"
	"math/rand/v2"
	"sync"
	"time"
)

// keepalive keeps a run's held messages alive and reads its consumer's
// ack-pending count, each on a timer whose callback runs only when it
// fires: an idle handler has no goroutine waiting for either.
//
// Keeping alive: every held message, running or queued, that the server
// last heard of a third of an ack wait ago or more gets an in-progress
// ack. The tick is a sixth of the ack wait, so an ack goes out by half the
// ack wait at the latest: the other half is margin for a loaded machine
// or network.
//
// Reading ack pending: every ackPendingEvery, on its own timer, so that a
// slow server (a read may wait up to the API timeout, longer than a short
// ack wait) never holds the keep-alives back.
type keepalive struct {
	r   *jsRun
	ctx context.Context

	mu      sync.Mutex
	stopped bool
	keepT   *time.Timer
	readT   *time.Timer
	running sync.WaitGroup // callbacks in progress
	due     []*Msg         // reused by the keep-alive callback
}

// startKeepalive starts keeping r's held messages alive and reading its ack
// pending until the returned stop is called; stop waits for a callback
// in progress.
func (r *jsRun) startKeepalive(ctx context.Context) (stop func()) {
	t := &keepalive{r: r, ctx: ctx}
	t.mu.Lock()
	t.keepT = time.AfterFunc(t.tick(), t.keep)
	// A random phase, so that a fleet's instances, started together, do
	// not all ask the server at once.
	t.readT = time.AfterFunc(rand.N(ackPendingEvery)+time.Millisecond, t.read)
	t.mu.Unlock()
	return t.stop
}

// tick follows the ack wait, which changes when a bound consumer is read
// again.
func (t *keepalive) tick() time.Duration {
	return max(time.Duration(t.r.ackWait.Load())/6, 10*time.Millisecond)
}

// enter reports whether a callback may run, counting it as running.
func (t *keepalive) enter() bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.stopped {
		return false
	}
	t.running.Add(1)
	return true
}

// again schedules timer to fire after d, unless stop was called.
func (t *keepalive) again(timer *time.Timer, d time.Duration) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if !t.stopped {
		timer.Reset(d)
	}
}

func (t *keepalive) keep() {
	if !t.enter() {
		return
	}
	defer t.running.Done()
	r := t.r
	ackWait := time.Duration(r.ackWait.Load())
	// Only this callback uses due: the next firing is scheduled after it.
	t.due = r.held.due(time.Now(), ackWait/3, t.due[:0])
	for _, m := range t.due {
		if m.InProgress() == nil {
			r.j.stats.inProgress.Add(1)
		}
	}
	clear(t.due)
	t.again(t.keepT, t.tick())
}

func (t *keepalive) read() {
	if !t.enter() {
		return
	}
	defer t.running.Done()
	t.r.readAckPending(t.ctx)
	t.again(t.readT, ackPendingEvery)
}

func (t *keepalive) stop() {
	t.mu.Lock()
	t.stopped = true
	t.keepT.Stop()
	t.readT.Stop()
	t.mu.Unlock()
	t.running.Wait()
}
