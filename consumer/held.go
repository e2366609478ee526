package consumer

import (
	"sync"
	"sync/atomic"
	"time"
)

// heldMsgs are the messages a JetStream run holds: pulled and not yet
// settled, running or queued, from any inbox. Their number is capped at
// the run's capacity (workers + queue), which pull requests follow, and
// the keeper keeps every one of them alive.
type heldMsgs struct {
	capacity int
	n        atomic.Int64
	peak     *atomic.Int64 // the handler's PeakHeld
	freed    chan struct{} // a message was released: the puller may ask for more

	mu  sync.Mutex
	set map[*Msg]struct{} // for in-progress acks
}

func newHeldMsgs(capacity int, peak *atomic.Int64) *heldMsgs {
	return &heldMsgs{capacity: capacity, peak: peak, freed: make(chan struct{}, 1), set: map[*Msg]struct{}{}}
}

// hold counts a message as held unless the run holds all it can; it
// reports whether it did. The message joins the set by add.
func (h *heldMsgs) hold() bool {
	for {
		n := h.n.Load()
		if n >= int64(h.capacity) {
			return false
		}
		if h.n.CompareAndSwap(n, n+1) {
			for {
				p := h.peak.Load()
				if n+1 <= p || h.peak.CompareAndSwap(p, n+1) {
					return true
				}
			}
		}
	}
}

// add puts a message counted by hold in the set the keeper keeps alive.
func (h *heldMsgs) add(m *Msg) {
	h.mu.Lock()
	h.set[m] = struct{}{}
	h.mu.Unlock()
}

// release frees m's room, once it is settled or handed back.
func (h *heldMsgs) release(m *Msg) {
	h.mu.Lock()
	delete(h.set, m)
	h.mu.Unlock()
	h.n.Add(-1)
	select {
	case h.freed <- struct{}{}:
	default:
	}
}

// count is the number of messages held now.
func (h *heldMsgs) count() int { return int(h.n.Load()) }

// due appends to into the held messages the server last heard of age ago
// or more, as of now.
func (h *heldMsgs) due(now time.Time, age time.Duration, into []*Msg) []*Msg {
	h.mu.Lock()
	defer h.mu.Unlock()
	for m := range h.set {
		if now.Sub(time.Unix(0, m.alive.Load())) >= age {
			into = append(into, m)
		}
	}
	return into
}
