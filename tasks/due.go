package tasks

import (
	"sync"
	"time"
)

// dueList calls fire for each entry once it has been on the list for
// after, unless it was removed first. Every entry waits the same after,
// so they come due in the order they were added: one list in that order
// and one timer, armed for its head, serve them all, where a timer per
// entry would cost an allocation and two changes of the runtime's timer
// heap each. Entries are embedded in what they stand for, so adding one
// allocates nothing.
type dueList[T any] struct {
	after time.Duration
	// fire is called for an entry taken off the list, outside the list's
	// mutex; stop waits for the calls in progress.
	fire func(T)

	mu         sync.Mutex
	head, tail *dueEntry[T]
	timer      *time.Timer
	armed      bool // the timer fires no later than the head is due
	stopped    bool
	firing     sync.WaitGroup // fire calls in progress, added to under mu
}

// dueEntry is a place on a dueList.
type dueEntry[T any] struct {
	v          T
	due        time.Time
	listed     bool
	prev, next *dueEntry[T]
}

// add puts e, standing for v, at the end of the list, due after from
// now. e is on no list.
func (q *dueList[T]) add(e *dueEntry[T], v T, now time.Time) {
	q.mu.Lock()
	defer q.mu.Unlock()
	e.v, e.due, e.listed = v, now.Add(q.after), true
	e.prev, e.next = q.tail, nil
	if !q.armed && !q.stopped {
		q.arm(q.after)
	}
	if q.tail == nil {
		q.head = e
	} else {
		q.tail.next = e
	}
	q.tail = e
}

// remove takes e off the list, and reports whether it was on it: it will
// not fire from here. The timer stays armed: when entries are removed
// before they are due, as most are, it fires once per after, not once
// per entry.
func (q *dueList[T]) remove(e *dueEntry[T]) bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.unlink(e)
}

// now fires e at once, unless it is off the list or the list stopped.
func (q *dueList[T]) now(e *dueEntry[T]) {
	q.mu.Lock()
	v := e.v
	ok := q.unlink(e) && !q.stopped
	if ok {
		q.firing.Add(1)
	}
	q.mu.Unlock()
	if ok {
		defer q.firing.Done()
		q.fire(v)
	}
}

// expire fires every entry due, and arms the timer for the next.
func (q *dueList[T]) expire() {
	q.mu.Lock()
	if q.stopped {
		q.mu.Unlock()
		return
	}
	now := time.Now()
	var due []T
	for e := q.head; e != nil && !e.due.After(now); e = q.head {
		due = append(due, e.v)
		q.unlink(e)
	}
	q.armed = false
	if q.head != nil {
		q.arm(q.head.due.Sub(now))
	}
	q.firing.Add(1)
	q.mu.Unlock()
	defer q.firing.Done()
	for _, v := range due {
		q.fire(v)
	}
}

// stop disarms the timer and waits for the fire calls in progress: none
// runs once it returns, and none starts after.
func (q *dueList[T]) stop() {
	q.mu.Lock()
	q.stopped = true
	if q.timer != nil {
		q.timer.Stop()
	}
	q.armed = false
	q.mu.Unlock()
	q.firing.Wait()
}

func (q *dueList[T]) arm(in time.Duration) {
	q.armed = true
	if q.timer == nil {
		q.timer = time.AfterFunc(in, q.expire)
		return
	}
	q.timer.Reset(in)
}

func (q *dueList[T]) unlink(e *dueEntry[T]) bool {
	if !e.listed {
		return false
	}
	e.listed = false
	if e.prev == nil {
		q.head = e.next
	} else {
		e.prev.next = e.next
	}
	if e.next == nil {
		q.tail = e.prev
	} else {
		e.next.prev = e.prev
	}
	e.prev, e.next = nil, nil
	var zero T
	e.v = zero
	return true
}
