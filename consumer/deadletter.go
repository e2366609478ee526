package consumer

import (
	"context"
	"errors"
	"fmt"
	"strconv"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/corral-go/corral/internal/jsapi"
	"github.com/corral-go/corral/internal/logfield"
)

// Headers added to a dead-lettered message, beside its own.
const (
	// DeadLetterStreamHeader names the stream the message was consumed
	// from.
	DeadLetterStreamHeader = "Corral-Dead-Letter-Stream"
	// DeadLetterConsumerHeader names the consumer it was delivered by.
	DeadLetterConsumerHeader = "Corral-Dead-Letter-Consumer"
	// DeadLetterSubjectHeader is the subject it was published to.
	DeadLetterSubjectHeader = "Corral-Dead-Letter-Subject"
	// DeadLetterSequenceHeader is its sequence in its stream.
	DeadLetterSequenceHeader = "Corral-Dead-Letter-Sequence"
	// DeadLetterDeliveriesHeader is how many times it was delivered.
	DeadLetterDeliveriesHeader = "Corral-Dead-Letter-Deliveries"
	// DeadLetterErrorHeader is the handler's last error.
	DeadLetterErrorHeader = "Corral-Dead-Letter-Error"
)

// deadLetter publishes m to the dead-letter subject and terminates it once
// a stream has acknowledged the copy. If the publish fails, m is naked:
// it is delivered again (max deliveries are counted here, not by the
// server, when a dead-letter subject is set) and the copy is tried again.
func (r *jsRun) deadLetter(ctx context.Context, m *Msg, cause error) {
	j := r.j
	ev := DeadLettered{EventTime: j.events.Stamp(), Handler: j.name, Stream: j.cfg.Stream, Consumer: j.cfg.Consumer,
		Subject: m.Subject(), DeadLetter: j.cfg.DeadLetter, Sequence: m.js.md.Sequence.Stream,
		Deliveries: m.js.md.NumDelivered, Err: cause}
	out := nats.NewMsg(j.cfg.DeadLetter)
	out.Data = m.Data()
	for k, v := range m.Header() {
		// Headers that would act on the dead-letter stream are dropped.
		if !jsapi.ActsOnStream(k) {
			out.Header[k] = append([]string(nil), v...)
		}
	}
	out.Header.Set(DeadLetterStreamHeader, j.cfg.Stream)
	out.Header.Set(DeadLetterConsumerHeader, j.cfg.Consumer)
	out.Header.Set(DeadLetterSubjectHeader, m.Subject())
	out.Header.Set(DeadLetterSequenceHeader, strconv.FormatUint(m.js.md.Sequence.Stream, 10))
	out.Header.Set(DeadLetterDeliveriesHeader, strconv.FormatUint(m.js.md.NumDelivered, 10))
	reason := logfield.Text(cause)
	out.Header.Set(DeadLetterErrorHeader, reason)
	// A retried dead-letter publish is not stored twice; the stream, the
	// consumer and the message's time tell apart copies of different
	// messages with the same sequence.
	out.Header.Set(jetstream.MsgIDHeader, fmt.Sprintf("dead-letter.%s.%s.%d.%d",
		j.cfg.Stream, j.cfg.Consumer, m.js.md.Sequence.Stream, m.js.md.Timestamp.UnixNano()))

	var err error
	if js := r.js.Load(); js == nil {
		err = jsapi.ErrConnGone
	} else {
		pctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), jsapi.Timeout)
		_, err = (*js).PublishMsg(pctx, out)
		cancel()
	}
	if errors.Is(err, jetstream.ErrNoStreamResponse) || errors.Is(err, nats.ErrNoResponders) {
		// nats.go's words ("no response from stream") do not say why.
		err = fmt.Errorf("no stream answered for %s (none stores it, or JetStream is unavailable): %w", j.cfg.DeadLetter, err)
	}
	if err != nil {
		_ = m.Nak(j.backoff(m))
		j.stats.deadLetterFailed.Add(1)
		repeated := j.deadLetterFailing.Fail(err.Error())
		j.events.Emit(DeadLetterFailed{DeadLettered: ev, PublishErr: err, Repeated: repeated})
		return
	}
	j.deadLetterFailing.End()
	r.terminal.Delete(m.js.md.Sequence.Stream)
	if m.Term("dead-lettered to "+j.cfg.DeadLetter+": "+reason) == nil {
		j.stats.deadLettered.Add(1)
	}
	j.events.Emit(ev)
}
