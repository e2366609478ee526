package publisher

import (
	"errors"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
)

// Re-sends go out in accept order, whatever order they came back in.
func TestRetriesGoOutInAcceptOrder(t *testing.T) {
	p, err := New(Config{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	const n = 100
	es := make([]*entry, n)
	for i := range es {
		es[i] = testEntry(i)
		es[i].order = uint64(i + 1)
	}
	p.mu.Lock()
	p.count = n
	for _, i := range rand.Perm(n) {
		if r := p.requeueLocked(es[i], nats.ErrDisconnected, true); r != queued {
			t.Fatalf("requeue: %v", r)
		}
	}
	p.mu.Unlock()
	for i := range n {
		e, _, _, _ := p.next()
		if e != es[i] {
			t.Fatalf("re-send %d: got order %d, want %d", i, e.order, es[i].order)
		}
	}
	// A retry backing off does not hold up the ones due.
	p.mu.Lock()
	es[0].attempts, es[1].attempts = 0, 0
	_ = p.requeueLocked(es[0], errors.New("timeout"), false)
	_ = p.requeueLocked(es[1], nats.ErrDisconnected, true)
	p.mu.Unlock()
	if e, _, _, _ := p.next(); e != es[1] {
		t.Fatal("a due retry waited behind one backing off")
	}
	if e, _, wait, _ := p.next(); e != nil || wait <= 0 || wait > time.Second {
		t.Fatalf("next: %v, wait %v: want nothing due yet", e, wait)
	}
}

func TestGivesUpAfterMaxAttempts(t *testing.T) {
	p, err := New(Config{MaxAttempts: 3}, nil)
	if err != nil {
		t.Fatal(err)
	}
	e := testEntry(1)
	p.mu.Lock()
	defer p.mu.Unlock()
	for i := range 3 {
		r := p.requeueLocked(e, errors.New("timeout"), false)
		if want := map[bool]requeueOutcome{false: queued, true: gaveUp}[i == 2]; r != want {
			t.Fatalf("failure %d: %v, want %v", i+1, r, want)
		}
		p.retries = nil
	}
	if r := p.requeueLocked(e, nats.ErrDisconnected, true); r != queued {
		t.Fatal("a lost connection counted as an attempt")
	}
}
