package tasks

import (
	"sync"
	"sync/atomic"
	"time"
)

// Taking tasks ahead (Config.Prefetch). A worker whose tasks end quickly
// would leave its slots idle for a round trip to the server each time it
// asks for more; it asks for some beyond its free slots instead, as a
// JetStream handler queues messages for its workers. A copy taken ahead
// is neither started nor claimed: it stays the queue's, its ClaimWait
// running, until a slot starts it.
//
// Two rules keep it from holding back work that others could run:
//   - The worker takes ahead no more than its runs ended in the last
//     paceWindow (pace): copies ahead start within about that long at
//     the pace its tasks run, and a worker whose slots are all taken by
//     long tasks, which end seldom, takes nothing ahead.
//   - A copy that waits longer than maxAhead for a slot (its tasks turned
//     long while it waited) is given back to the queue at once (aheadList),
//     for another worker; none starts after waiting that long. maxAhead is a
//     tenth of ClaimWait, so the queue never offers a waiting copy again
//     meanwhile, and a lazy run started from it is promoted well before
//     its copy's ack wait runs out; and at most a second, a hundred times
//     what the pace lets a copy wait: past that, the pace was wrong.

// paceWindow is how far back a worker counts the runs that ended, to
// decide how many tasks to take ahead: long enough to cover a few round
// trips to the server, short next to any ClaimWait.
const paceWindow = 10 * time.Millisecond

// maxAhead is the longest a copy taken ahead waits for a slot.
func maxAhead(claimWait time.Duration) time.Duration { return min(claimWait/10, time.Second) }

// paceEpoch numbers the windows on the monotonic clock: a step of the
// wall clock moves no run into another window.
var paceEpoch = time.Now()

// pace counts the runs that ended in the current paceWindow and in the
// one before.
type pace struct {
	mu        sync.Mutex
	window    int64 // the current window's number, from paceEpoch
	cur, prev int
}

func paceIndex(t time.Time) int64 { return int64(t.Sub(paceEpoch) / paceWindow) }

// ended counts a run that ended at now. Runs end on many goroutines, each
// reading the clock before the lock: one that read it just before the
// window moved on counts in the window before, and none moves it back.
func (p *pace) ended(now time.Time) {
	i := paceIndex(now)
	p.mu.Lock()
	defer p.mu.Unlock()
	switch {
	case i == p.window:
		p.cur++
	case i == p.window-1:
		p.prev++
	case i > p.window:
		p.prev = 0
		if i == p.window+1 {
			p.prev = p.cur
		}
		p.window, p.cur = i, 1
	}
}

// ahead is how many tasks to take ahead at now: the runs that ended in
// the current paceWindow or, when that has just begun, in the one before;
// so those of the last 10 to 20 ms.
func (p *pace) ahead(now time.Time) int {
	i := paceIndex(now)
	p.mu.Lock()
	defer p.mu.Unlock()
	switch {
	case i <= p.window:
		return max(p.cur, p.prev)
	case i == p.window+1:
		return p.cur
	}
	return 0
}

// The states of a copy between the worker taking it and a slot.
const (
	copyWaiting   int32 = iota // taken, waiting for a slot
	copyStarted                // a slot has it: Handle or Return settles it
	copyGivenBack              // it waited maxAhead: given back to the queue
)

// aheadList holds the copies of a worker run waiting for a slot, in the
// order taken, and gives back those that waited maxAhead.
type aheadList struct {
	list   dueList[*delivery]
	passed *atomic.Uint64 // counts the copies given back
	// givenBack counts those still in the pool's queue: the puller counts
	// them held until a slot takes them and lets them go.
	givenBack atomic.Int64
}

// init readies a for r's copies, given back after maxAhead.
func (a *aheadList) init(r *run, maxAhead time.Duration) {
	a.list.after, a.passed = maxAhead, &r.w.stats.passedOver
	a.list.fire = func(d *delivery) {
		if d.state.CompareAndSwap(copyWaiting, copyGivenBack) {
			a.passed.Add(1)
			a.givenBack.Add(1)
			_ = d.nak(0)
		}
	}
}

// taken lists d, taken at now, as waiting for a slot.
func (a *aheadList) taken(d *delivery, now time.Time) {
	d.taken = now
	a.list.add(&d.waiting, d, now)
}

// start takes d off the list for a slot that starts it at now, and
// reports whether it may start: it was not given back, and has not
// waited maxAhead (the list's timer may fire late); one that has is
// given back now.
func (a *aheadList) start(d *delivery, now time.Time) bool {
	a.list.remove(&d.waiting)
	if !d.state.CompareAndSwap(copyWaiting, copyStarted) {
		a.givenBack.Add(-1)
		return false
	}
	if now.Sub(d.taken) >= a.list.after {
		a.passed.Add(1)
		_ = d.nak(0)
		return false
	}
	return true
}

// returned takes d off the list for the pool, which will not start it,
// and reports whether the copy is still the worker's to give back.
func (a *aheadList) returned(d *delivery) bool {
	a.list.remove(&d.waiting)
	if !d.state.CompareAndSwap(copyWaiting, copyStarted) {
		a.givenBack.Add(-1)
		return false
	}
	return true
}

// stop gives back nothing more.
func (a *aheadList) stop() { a.list.stop() }
