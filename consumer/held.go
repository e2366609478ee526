package consumer

import (
	"sync"
	"time"
)

// heldMsgs are the messages a JetStream run holds (pulled and not yet
// settled, running or queued, from any inbox), as the keepalive keeps them
// alive. The puller counts them against the run's capacity.
type heldMsgs struct {
	mu  sync.Mutex
	set map[*Msg]struct{}
}

func newHeldMsgs() *heldMsgs { return &heldMsgs{set: map[*Msg]struct{}{}} }

// add puts a message in the set the keepalive keeps alive.
func (h *heldMsgs) add(m *Msg) {
	h.mu.Lock()
	h.set[m] = struct{}{}
	h.mu.Unlock()
}

// remove takes m out, once it is settled or handed back.
func (h *heldMsgs) remove(m *Msg) {
	h.mu.Lock()
	delete(h.set, m)
	h.mu.Unlock()
}

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
