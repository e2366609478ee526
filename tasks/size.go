package tasks

import (
	"errors"
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/nats-io/nuid"

	"github.com/corral-go/corral/internal/jsapi"
)

// maxHeaders is the most bytes of headers a stream stores.
const maxHeaders = math.MaxUint16

// CheckTask returns nil when queue can carry the task m enqueues, m being
// the message as it will be published to the queue's subject, through
// every write the queue makes of it; else an error saying why:
//
//   - its Nats-Msg-Id, the task's id, wraps ErrReservedMsgID when, as the
//     server stores it, it begins with ReservedMsgIDPrefix, and
//     ErrInvalidTaskID when it is empty, longer than MaxIDLen, not UTF-8
//     text, has a control character or white space at either end;
//   - a header of the queue's own (beginning Corral-Task-), or one that
//     makes or marks a message schedule (beginning Nats-Schedule, as
//     Nats-Schedule-Target and Nats-Scheduler do), wraps
//     ErrReservedHeader and names it: the queue's stream allows
//     schedules, and a caller's would be one the queue never declared;
//   - a *TooLargeError, which matches ErrTaskTooLarge, says the largest
//     task the queue takes with this id and these headers, when a write
//     of the task would be larger than maxPayload (the server's
//     max_payload; it then matches nats.ErrMaxPayload too), or its
//     headers larger than the 65535 bytes a stream stores.
//
// The writes measured are those that carry the task: its claim, a
// put-back and its dead letter, built as the queue builds them, with the
// error text at MaxErrorLen, the worker's process name at MaxProcessLen
// and every count and time at its longest, so that no write of a task
// CheckTask accepts is refused for its size by a server with that
// max_payload. corral.Client's Enqueue checks every task with it; a
// client that enqueues by publishing to the queue's subject should too.
func CheckTask(queue string, m *nats.Msg, maxPayload int64) error {
	if err := checkID(m.Header.Get(jetstream.MsgIDHeader)); err != nil {
		return err
	}
	for k := range m.Header {
		if protocolHeader(k) || scheduleHeader(k) {
			return fmt.Errorf("%w: %s", ErrReservedHeader, k)
		}
	}
	own := headerSize(m.Header)
	most := max(own, largestHeaders(queue, parseTask(m.Header, m.Data, 0)))
	added := most - own
	switch {
	case most > maxHeaders:
		return &TooLargeError{Size: own, Limit: maxHeaders - added, Added: added, Headers: true}
	case int64(len(m.Data)+most) > maxPayload:
		return &TooLargeError{Size: len(m.Data) + own, Limit: int(maxPayload) - added, Added: added}
	}
	return nil
}

// scheduleHeader reports whether k makes a message a schedule or marks it
// as fired by one (Nats-Schedule, Nats-Schedule-*, Nats-Scheduler), as
// nats-server spells them.
func scheduleHeader(k string) bool { return strings.HasPrefix(k, "Nats-Schedule") }

// TooLargeError is a task CheckTask refused for its size: the server would
// refuse a write the queue makes of it. It matches ErrTaskTooLarge, and
// nats.ErrMaxPayload unless Headers is set.
type TooLargeError struct {
	// Size is the task's data and headers as enqueued, in bytes; its
	// headers alone when Headers is set.
	Size int
	// Limit is the largest Size the queue takes, with this task's id and
	// headers.
	Limit int
	// Added is the most bytes of headers a write of the queue's adds to
	// the task's own.
	Added int
	// Headers says the limit is a stream's on headers, 65535 bytes,
	// rather than the server's max_payload on data and headers.
	Headers bool
}

// Error says the task's size, the queue's limit, and where it comes from.
func (e *TooLargeError) Error() string {
	if e.Headers {
		return fmt.Sprintf("%v: its headers are %d bytes, the queue takes at most %d: its writes add up to %d bytes of headers, and a stream stores at most %d",
			ErrTaskTooLarge, e.Size, e.Limit, e.Added, maxHeaders)
	}
	return fmt.Sprintf("%v: %d bytes of data and headers, the queue takes at most %d: its writes add up to %d bytes of headers, and the server's max_payload is %d",
		ErrTaskTooLarge, e.Size, e.Limit, e.Added, e.Limit+e.Added)
}

// Unwrap returns ErrTaskTooLarge, and nats.ErrMaxPayload unless Headers
// is set.
func (e *TooLargeError) Unwrap() []error {
	if e.Headers {
		return []error{ErrTaskTooLarge}
	}
	return []error{ErrTaskTooLarge, nats.ErrMaxPayload}
}

// largestHeaders is the size of the largest headers a write of the queue's
// carries about t: its EnqueueTask, its claim, a put-back or its dead letter, each
// measured as nats.go encodes it, with t's counts and times at their
// longest, the longest process name a claim carries (MaxProcessLen) and
// the longest error text a dead letter keeps.
func largestHeaders(queue string, t task) int {
	n := names{queue: queue}
	// A lease's identity is as long as every one; a process's name at its
	// longest.
	h := holder{worker: nuid.Next(), process: strings.Repeat("p", MaxProcessLen)}
	t.attempt, t.failures = math.MaxInt, math.MaxInt
	t.notBefore, t.avoid, t.nonce = time.Unix(0, math.MaxInt64), h.worker, nuid.Next()
	longest := errors.New(strings.Repeat("x", MaxErrorLen))
	// Subjects count for neither limit. A put-back with a delay is a
	// schedule, which names the subject it fires on, and its copy the
	// schedule's.
	back := n.putBackMsg(t)
	return max(headerSize(n.enqueueMsg(t, slotBack, t.notBefore).Header), headerSize(n.claimMsg(t, h, math.MaxUint64).Header),
		headerSize(back.Header), headerSize(fired(back).Header), headerSize(deadLetterMsg("", t, t.attempt, longest).Header))
}

// fired is the copy nats-server 2.15 stores when schedule m fires: m's
// headers but those that act on the stream, and two of its own.
func fired(m *nats.Msg) *nats.Msg {
	c := nats.NewMsg(m.Header.Get(jetstream.ScheduleTargetHeader))
	for k, v := range m.Header {
		if !jsapi.ActsOnStream(k) {
			c.Header[k] = v
		}
	}
	c.Header.Set("Nats-Scheduler", m.Subject)
	c.Header.Set("Nats-Schedule-Next", "purge")
	return c
}

// headerSize is the size of h as nats.go encodes it: what counts against
// the server's max_payload, and a stream's limit on headers.
func headerSize(h nats.Header) int { return (&nats.Msg{Header: h}).Size() }
