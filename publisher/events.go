package publisher

import (
	"time"

	"github.com/corral-go/corral/supervisor"
)

// PublishFailed is emitted when a message failed for good (no stream
// stores its subject, permissions...); its [Future] has the error. An
// expected sequence that did not match is the answer its caller asked
// for, counted in Status.Refused, and reported so only for a message
// recovered from the spool, whose Future nobody holds. It is emitted at most once a second:
// Suppressed counts the failures since the previous one.
type PublishFailed struct {
	supervisor.EventTime
	Subject    string
	MsgID      string
	Err        error
	Suppressed uint64
}

// Kind returns "publisher.publish_failed".
func (PublishFailed) Kind() string { return "publisher.publish_failed" }

// Level returns ErrorLevel.
func (PublishFailed) Level() supervisor.Level { return supervisor.ErrorLevel }

// SpoolRecovered is emitted when messages a previous run left in the spool
// in Dir were queued to be sent.
type SpoolRecovered struct {
	supervisor.EventTime
	Dir      string
	Messages int
}

// Kind returns "publisher.spool_recovered".
func (SpoolRecovered) Kind() string { return "publisher.spool_recovered" }

// SpoolError is emitted when the spool could not record that a message was
// settled; the message may be sent again at the next start (and
// deduplicated by its Msg-Id).
type SpoolError struct {
	supervisor.EventTime
	Err error
}

// Kind returns "publisher.spool_error".
func (SpoolError) Kind() string { return "publisher.spool_error" }

// Level returns ErrorLevel.
func (SpoolError) Level() supervisor.Level { return supervisor.ErrorLevel }

// SpoolCorrupt is emitted for each damaged place in a spool segment: a
// record that cannot be read and is not a torn last write (one whose
// declared length runs past the end of the segment). The segment was
// renamed to KeptAs for inspection and its readable unsettled records,
// before and after the damage, were spooled again. Err says how many bytes
// from Offset were not read, and their records are not sent, or that the
// damaged record was whole (only its length was hit) and is kept.
type SpoolCorrupt struct {
	supervisor.EventTime
	Dir     string
	Segment uint64
	Offset  int64
	Err     error
	KeptAs  string
}

// Kind returns "publisher.spool_corrupt".
func (SpoolCorrupt) Kind() string { return "publisher.spool_corrupt" }

// Level returns ErrorLevel.
func (SpoolCorrupt) Level() supervisor.Level { return supervisor.ErrorLevel }

// Stopped is emitted when the publisher has stopped. Undelivered counts
// the messages accepted and not acknowledged within the shutdown timeout:
// with a spool (Spooled) they are sent at the next start, without one
// they went to [Config.OnUndelivered].
type Stopped struct {
	supervisor.EventTime
	Undelivered int
	Spooled     bool
}

// Kind returns "publisher.stopped".
func (Stopped) Kind() string { return "publisher.stopped" }

// Level returns ErrorLevel when messages were lost to the stop (undelivered
// without a spool), InfoLevel otherwise.
func (e Stopped) Level() supervisor.Level {
	if e.Undelivered > 0 && !e.Spooled {
		return supervisor.ErrorLevel
	}
	return supervisor.InfoLevel
}

// failedEvent emits a PublishFailed event, at most one a second.
func (p *Buffered) failedEvent(e *entry, err error) {
	c := &p.stats
	c.failMu.Lock()
	now := time.Now()
	if now.Sub(c.lastFailAt) < time.Second {
		c.failsSince++
		c.failMu.Unlock()
		return
	}
	suppressed := c.failsSince
	c.lastFailAt, c.failsSince = now, 0
	c.failMu.Unlock()
	p.events.Emit(PublishFailed{EventTime: p.events.Stamp(), Subject: e.msg.Subject,
		MsgID: e.msg.Header.Get("Nats-Msg-Id"), Err: err, Suppressed: suppressed})
}
