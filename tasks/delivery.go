package tasks

import (
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// delivery is one copy of a task as the queue consumer delivered it, and,
// once the worker claimed it, the record it holds the task by.
type delivery struct {
	raw  *nats.Msg
	nc   *nats.Conn // acks go back on the connection it came from
	meta jetstream.MsgMetadata

	// Between the worker taking the copy and a slot starting it (see
	// aheadList):
	taken   time.Time
	waiting dueEntry[*delivery]
	state   atomic.Int32

	reserved string // the task's ID, while no other copy of it runs here
	claimed  bool
	lazy     *lazyRun // a run started before its claim
	rec      record
	task     *Task // the run, once it started

	// What lazy and task point to: one allocation per copy, not three.
	lazyBuf lazyRun
	taskBuf Task
}

var (
	ackBody = []byte("+ACK")
	nakBody = []byte("-NAK")
)

// ack removes the copy from the queue: the task is held, or done, or a
// duplicate of one that is.
func (d *delivery) ack() error { return d.nc.Publish(d.raw.Reply, ackBody) }

// nak asks for the copy again after delay (0: at once), without claiming
// it.
func (d *delivery) nak(delay time.Duration) error {
	if delay <= 0 {
		return d.nc.Publish(d.raw.Reply, nakBody)
	}
	return d.nc.Publish(d.raw.Reply, []byte(`-NAK {"delay": `+strconv.FormatInt(delay.Nanoseconds(), 10)+`}`))
}

// reserved are the task IDs a copy of which a worker claims or runs.
type reserved struct {
	mu  sync.Mutex
	ids map[string]struct{}
}

// reserve reserves id, and reports whether it was free.
func (r *reserved) reserve(id string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, busy := r.ids[id]; busy {
		return false
	}
	if r.ids == nil {
		r.ids = map[string]struct{}{}
	}
	r.ids[id] = struct{}{}
	return true
}

func (r *reserved) release(id string) {
	r.mu.Lock()
	delete(r.ids, id)
	r.mu.Unlock()
}
