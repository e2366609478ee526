package tasks

import (
	"context"
	"sync"
	"time"
)

// promoter starts the promotion of each lazy run of a worker run once it
// has run ClaimAfter, on a goroutine of its own: a claim waits for the
// server.
type promoter struct {
	r       *run
	list    dueList[*lazyRun]
	running sync.WaitGroup // the promotions started, which stop waits for
}

// init readies p for r's lazy runs, promoted once they have run after.
func (p *promoter) init(r *run, after time.Duration) {
	p.r = r
	p.list.after, p.list.fire = after, p.start
}

// add puts l, started under ctx, on the list.
func (p *promoter) add(ctx context.Context, l *lazyRun, d *delivery) {
	l.parent, l.d = ctx, d
	p.list.add(&l.due, l, time.Now())
}

// remove takes l off the list, if it is still on it: its promotion will
// not start from here.
func (p *promoter) remove(l *lazyRun) { p.list.remove(&l.due) }

// now starts l's promotion at once, unless it started already.
func (p *promoter) now(l *lazyRun) { p.list.now(&l.due) }

// start runs l's promotion, on a goroutine of its own: the list's fire,
// none of which runs once the list's stop returned, so no Go follows
// stop's Wait.
func (p *promoter) start(l *lazyRun) {
	parent, d := l.parent, l.d
	p.running.Go(func() { p.r.promote(parent, d) })
}

// stop disarms the timer and waits for the promotions started: the
// run's lazy runs have all ended, so each has returned or returns at once.
func (p *promoter) stop() {
	p.list.stop()
	p.running.Wait()
}
