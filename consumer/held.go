package consumer

import (
	"sync"
	"time"
)

// heldMsgs are the messages a JetStream run holds (pulled and not yet
// settled, running or queued, from any inbox), as the keepalive keeps them
// alive. The puller counts them against the run's capacity. They are a
// list through the messages themselves: adding and removing one, twice a
// message under a lock its inbox and its workers share, is a few pointer
// writes, where a set hashed and grew.
type heldMsgs struct {
	mu   sync.Mutex
	head *Msg
}

func newHeldMsgs() *heldMsgs { return &heldMsgs{} }

// add puts a JetStream message in the list the keepalive keeps alive.
func (h *heldMsgs) add(m *Msg) {
	h.mu.Lock()
	m.js.prev, m.js.next = nil, h.head
	if h.head != nil {
		h.head.js.prev = m
	}
	h.head = m
	h.mu.Unlock()
}

// remove takes m out, once it is settled or handed back; a message not in
// the list is left alone.
func (h *heldMsgs) remove(m *Msg) {
	h.mu.Lock()
	defer h.mu.Unlock()
	switch {
	case m.js.prev != nil:
		m.js.prev.js.next = m.js.next
	case h.head == m:
		h.head = m.js.next
	default:
		return
	}
	if m.js.next != nil {
		m.js.next.js.prev = m.js.prev
	}
	m.js.prev, m.js.next = nil, nil
}

// due appends to into the held messages the server last heard of age ago
// or more, as of now.
func (h *heldMsgs) due(now time.Time, age time.Duration, into []*Msg) []*Msg {
	h.mu.Lock()
	defer h.mu.Unlock()
	for m := h.head; m != nil; m = m.js.next {
		if now.Sub(time.Unix(0, m.js.alive.Load())) >= age {
			into = append(into, m)
		}
	}
	return into
}
