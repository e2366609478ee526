package tasks

import (
	"context"
	"sync"
	"time"
)

// promoter starts the promotion of each lazy run of a worker run once it
// has run ClaimAfter. Every run waits the same ClaimAfter, so they come
// due in the order they started: one list in that order and one timer,
// armed for its head, serve them all, where a timer per run would cost
// an allocation and two changes of the runtime's timer heap per task.
type promoter struct {
	r     *run
	after time.Duration

	mu         sync.Mutex
	head, tail *lazyRun
	timer      *time.Timer
	armed      bool // the timer fires no later than the head is due
	stopped    bool
	running    sync.WaitGroup // the promotions started, which stop waits for
}

// add puts l, started under ctx, at the end of the list.
func (p *promoter) add(ctx context.Context, l *lazyRun, d *delivery) {
	l.parent, l.d = ctx, d
	p.mu.Lock()
	defer p.mu.Unlock()
	l.due = time.Now().Add(p.after)
	l.listed = true
	l.prev, l.next = p.tail, nil
	if !p.armed {
		p.arm(p.after)
	}
	if p.tail == nil {
		p.head = l
	} else {
		p.tail.next = l
	}
	p.tail = l
}

// remove takes l off the list, if it is still on it: its promotion will
// not start from here. The timer stays armed: when runs end in less than
// ClaimAfter, as most do, it fires once per ClaimAfter, not once per run.
func (p *promoter) remove(l *lazyRun) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.unlink(l)
}

// now starts l's promotion at once, unless it started already.
func (p *promoter) now(l *lazyRun) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.unlink(l) {
		p.start(l)
	}
}

// start runs l's promotion on a goroutine of its own: a claim waits for
// the server. p.mu is held.
func (p *promoter) start(l *lazyRun) {
	if p.stopped {
		return
	}
	parent, d := l.parent, l.d
	p.running.Go(func() { p.r.promote(parent, d) })
}

// fire starts the promotion of every run due, and arms the timer for the
// next.
func (p *promoter) fire() {
	p.mu.Lock()
	defer p.mu.Unlock()
	now := time.Now()
	for l := p.head; l != nil && !l.due.After(now); l = p.head {
		p.unlink(l)
		p.start(l)
	}
	p.armed = false
	if p.head != nil && !p.stopped {
		p.arm(p.head.due.Sub(now))
	}
}

// stop disarms the timer and waits for the promotions started: the
// run's lazy runs have all ended, so each has returned or returns at once.
func (p *promoter) stop() {
	p.mu.Lock()
	p.stopped = true
	if p.timer != nil {
		p.timer.Stop()
	}
	p.armed = false
	p.mu.Unlock()
	p.running.Wait()
}

func (p *promoter) arm(in time.Duration) {
	p.armed = true
	if p.timer == nil {
		p.timer = time.AfterFunc(in, p.fire)
		return
	}
	p.timer.Reset(in)
}

func (p *promoter) unlink(l *lazyRun) bool {
	if !l.listed {
		return false
	}
	l.listed = false
	if l.prev == nil {
		p.head = l.next
	} else {
		l.prev.next = l.next
	}
	if l.next == nil {
		p.tail = l.prev
	} else {
		l.next.prev = l.prev
	}
	l.prev, l.next = nil, nil
	return true
}
