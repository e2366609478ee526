package tasks

import (
	"fmt"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/nats-io/nuid"
)

// Priority orders the tasks waiting in a queue: a worker with room takes
// every High task waiting before any Normal one, and every Normal one
// before any Low one. The order is strict: Low tasks wait while others
// keep a backlog. Tasks that come back (recovered, handed back, retried)
// run before all of them, whatever their priority.
type Priority int

// Priorities. The zero value is Normal: tasks published on the queue's
// Subject, as Client.Enqueue does, are Normal too.
const (
	Normal Priority = iota
	High
	Low
)

// String is the priority's name: "normal", "high" or "low".
func (p Priority) String() string {
	switch p {
	case Normal:
		return "normal"
	case High:
		return "high"
	case Low:
		return "low"
	}
	return fmt.Sprintf("Priority(%d)", int(p))
}

// UnmarshalText reads a priority by its name: high, normal or low.
func (p *Priority) UnmarshalText(b []byte) error {
	for _, q := range []Priority{High, Normal, Low} {
		if string(b) == q.String() {
			*p = q
			return nil
		}
	}
	return fmt.Errorf("tasks: unknown priority %q: want high, normal or low", b)
}

// MarshalText writes the priority's name.
func (p Priority) MarshalText() ([]byte, error) { return []byte(p.String()), nil }

// slot is where a task of priority p waits.
func (p Priority) slot() slot {
	switch p {
	case High:
		return slotHigh
	case Low:
		return slotLow
	}
	return slotNormal
}

// Option sets how NewMessage, and so corral.Client's EnqueueTask, enqueues
// a task.
type Option func(*options)

type options struct {
	id       string
	at       time.Time
	priority Priority
	header   nats.Header
}

// WithID gives the task id, kept exactly as given (Task.ID, events, dead
// letters) or refused: see CheckTask for the ids a queue takes. Without
// it the task gets a NUID. While a task with the id waits, is scheduled,
// runs, or completed within KeepCompleted (KeepResults with a result),
// the queue refuses another (Enqueued.Wait returns a *DuplicateError).
func WithID(id string) Option { return func(o *options) { o.id = id } }

// At has the task wait until t, by the server's clock: the queue's stream
// holds it as a message schedule, which the server turns into a waiting
// task at t, across restarts and leader changes. A time past, or less than
// a quarter of a second away, runs the task about a quarter of a second
// after it is stored.
func At(t time.Time) Option { return func(o *options) { o.at = t } }

// After has the task wait d from now, by this process's clock: At(now+d).
// A clock that runs apart from the server's moves the time by as much.
func After(d time.Duration) Option { return At(time.Now().Add(d)) }

// WithPriority sets the task's priority; the default is Normal.
func WithPriority(p Priority) Option { return func(o *options) { o.priority = p } }

// WithHeader adds h to the task's headers, which its handler reads with
// Task.Header. Headers beginning Corral-Task- or Nats-Schedule are the
// queue's own and refused.
func WithHeader(h nats.Header) Option {
	return func(o *options) {
		if o.header == nil {
			o.header = nats.Header{}
		}
		for k, v := range h {
			o.header[k] = append(o.header[k], v...)
		}
	}
}

// NewMessage returns the message that enqueues a task with data on queue,
// as opts say, or the error CheckTask returns for a task the queue cannot
// carry (with maxPayload the server's max_payload), or one for a priority
// unknown. The message goes to the queue's stream, as
// corral.Client's EnqueueTask publishes it: on a subject of its own
// beside the queue's Subject, by its priority, or, to wait until a time,
// as a message schedule. It is stored only if no copy or schedule of a
// task with its id waits in the queue: the server refuses it otherwise
// (a wrong last sequence), and Enqueued says which.
func NewMessage(queue string, data []byte, maxPayload int64, opts ...Option) (*nats.Msg, error) {
	var o options
	for _, opt := range opts {
		opt(&o)
	}
	if o.priority != Normal && o.priority != High && o.priority != Low {
		return nil, fmt.Errorf("tasks: unknown priority %d: want tasks.High, tasks.Normal or tasks.Low", int(o.priority))
	}
	if o.id == "" {
		o.id = nuid.Next()
	}
	m := &nats.Msg{Data: data, Header: nats.Header{}}
	for k, v := range o.header {
		m.Header[k] = v
	}
	m.Header.Set(jetstream.MsgIDHeader, o.id)
	if err := CheckTask(queue, m, maxPayload); err != nil {
		return nil, err
	}
	t := parseTask(m.Header, data, 0)
	t.nonce = nuid.Next()
	return names{queue: queue}.enqueueMsg(t, o.priority.slot(), o.at), nil
}

// enqueueMsg is t's message into the queue, waiting in slot s or, with at
// set, as a schedule that puts it there at at. The id goes in the queue's
// own header: a copy a schedule makes keeps no Msg-Id. The Msg-Id is the
// EnqueueTask call's, so that a re-send is one message but a task
// enqueued again under the id of one that failed is not taken for it.
func (n names) enqueueMsg(t task, s slot, at time.Time) *nats.Msg {
	m := t.message(n.waiting(s, t.id))
	m.Header.Set(jetstream.MsgIDHeader, ReservedMsgIDPrefix+"enqueue:"+t.nonce)
	m.Header.Set(jetstream.ExpectedLastSubjSeqSubjHeader, n.waitingByTask(t.id))
	m.Header.Set(jetstream.ExpectedLastSubjSeqHeader, "0")
	if !at.IsZero() {
		schedule(m, n.scheduled(t.id), at)
	}
	return m
}

// schedule makes m a message schedule on subject that puts m, as it is,
// on m's subject at t. The time is written to the nanosecond, which the
// server honours: nats.go's WithScheduleAt writes whole seconds.
func schedule(m *nats.Msg, subject string, t time.Time) {
	m.Header.Set(jetstream.ScheduleHeader, "@at "+t.UTC().Format(time.RFC3339Nano))
	m.Header.Set(jetstream.ScheduleTargetHeader, m.Subject)
	m.Subject = subject
}
