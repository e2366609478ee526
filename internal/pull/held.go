package pull

import "sync/atomic"

// held counts the messages an owner holds (pulled, not yet released) and
// caps them at its capacity.
type held struct {
	capacity int
	n        atomic.Int64
	peak     *atomic.Int64
	freed    chan struct{} // a message was released: the puller may ask for more
}

// hold counts a message as held unless the owner holds all it can; it
// reports whether it did.
func (h *held) hold() bool {
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

func (h *held) release() {
	h.n.Add(-1)
	select {
	case h.freed <- struct{}{}:
	default:
	}
}

func (h *held) count() int { return int(h.n.Load()) }
