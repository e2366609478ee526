package publisher

import (
	"time"

	"go.uber.org/zap/zapcore"

	"github.com/corral-go/corral/internal/logfield"
	"github.com/corral-go/corral/supervisor"
)

// PublishFailed: a message failed for good (no stream stores its subject,
// an expected sequence did not match, permissions...); its Future has the
// error. At most one event a second: Suppressed counts the failures since
// the previous one.
type PublishFailed struct {
	supervisor.EventTime
	Subject    string
	MsgID      string
	Err        error
	Suppressed uint64
}

// SpoolRecovered: messages a previous run left in the spool were queued to
// be sent.
type SpoolRecovered struct {
	supervisor.EventTime
	Dir      string
	Messages int
}

// SpoolError: the spool could not record that a message was settled; it
// may be sent again at the next start (and deduplicated by its Msg-Id).
type SpoolError struct {
	supervisor.EventTime
	Err error
}

// SpoolCorrupt: a spool segment held a bad record followed by more data
// (not a torn last write). The segment was renamed to KeptAs for
// inspection; its readable unsettled records were spooled again, and the
// records at and after Offset are not sent.
type SpoolCorrupt struct {
	supervisor.EventTime
	Dir     string
	Segment uint64
	Offset  int64
	Err     error
	KeptAs  string
}

// Stopped: the publisher stopped. Undelivered messages were accepted and
// not acknowledged within the shutdown timeout: with a spool they are sent
// at the next start, without one they went to OnUndelivered.
type Stopped struct {
	supervisor.EventTime
	Undelivered int
	Spooled     bool
}

func (PublishFailed) Kind() string { return "publisher.publish_failed" }

func (SpoolRecovered) Kind() string { return "publisher.spool_recovered" }

func (SpoolError) Kind() string { return "publisher.spool_error" }

func (SpoolCorrupt) Kind() string { return "publisher.spool_corrupt" }

func (Stopped) Kind() string { return "publisher.stopped" }

func (PublishFailed) Level() supervisor.Level { return supervisor.ErrorLevel }

func (SpoolRecovered) Level() supervisor.Level { return supervisor.InfoLevel }

func (SpoolError) Level() supervisor.Level { return supervisor.ErrorLevel }

func (SpoolCorrupt) Level() supervisor.Level { return supervisor.ErrorLevel }

func (e Stopped) Level() supervisor.Level {
	if e.Undelivered > 0 && !e.Spooled {
		return supervisor.ErrorLevel
	}
	return supervisor.InfoLevel
}

func (e PublishFailed) MarshalLogObject(enc zapcore.ObjectEncoder) error {
	enc.AddString("subject", e.Subject)
	enc.AddString("msg_id", e.MsgID)
	logfield.Error(enc, e.Err)
	enc.AddUint64("suppressed", e.Suppressed)
	return nil
}

func (e SpoolRecovered) MarshalLogObject(enc zapcore.ObjectEncoder) error {
	enc.AddString("dir", e.Dir)
	enc.AddInt("messages", e.Messages)
	return nil
}

func (e SpoolError) MarshalLogObject(enc zapcore.ObjectEncoder) error {
	logfield.Error(enc, e.Err)
	return nil
}

func (e SpoolCorrupt) MarshalLogObject(enc zapcore.ObjectEncoder) error {
	enc.AddString("dir", e.Dir)
	enc.AddUint64("segment", e.Segment)
	enc.AddInt64("offset", e.Offset)
	logfield.Error(enc, e.Err)
	enc.AddString("kept_as", e.KeptAs)
	return nil
}

func (e Stopped) MarshalLogObject(enc zapcore.ObjectEncoder) error {
	enc.AddInt("undelivered", e.Undelivered)
	enc.AddBool("spooled", e.Spooled)
	return nil
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
