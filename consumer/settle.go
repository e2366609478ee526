package consumer

import (
	"context"
	"errors"
	"time"

	"github.com/corral-go/corral/internal/jsapi"
	"github.com/corral-go/corral/internal/logfield"
	"github.com/corral-go/corral/supervisor"
)

// Settle settles a message the handler is done with, by its result, then
// frees its room. Settling runs the handler's error's methods (Error, Is,
// As): when one panics, the pool recovers and reports the panic, and the
// message is naked here on the way out.
func (r *jsRun) Settle(ctx context.Context, m *Msg, err error) {
	defer r.release(m)
	settled := false
	defer func() {
		if !settled {
			if m.Nak(r.j.backoff(m)) == nil {
				r.j.stats.naked.Add(1)
			}
		}
	}()
	r.settle(ctx, m, err)
	settled = true
}

// Return hands back a message that did not start, for redelivery at once.
func (r *jsRun) Return(m *Msg) {
	if m.Nak(0) == nil {
		r.j.stats.naked.Add(1)
	}
	r.returned.Add(1)
	r.release(m)
}

// release frees the room of a message the run is done with.
func (r *jsRun) release(m *Msg) {
	r.held.remove(m)
	r.puller.Release()
}

// ReportPanic emits a HandlerPanicked event.
func (r *jsRun) ReportPanic(m *Msg, pe *supervisor.PanicError, suppressed uint64) {
	r.j.reportPanic(m, pe, suppressed)
}

// ReportFailure emits a HandlerFailed event.
func (r *jsRun) ReportFailure(m *Msg, err error, suppressed uint64) {
	r.j.reportFailure(m, err, suppressed)
}

// settle acks, naks, terminates or dead-letters m according to err, unless
// the handler settled it already.
func (r *jsRun) settle(ctx context.Context, m *Msg, err error) {
	j := r.j
	if err == nil && !j.cfg.DoubleAck {
		// The usual end, in one lock of m: Ack refuses a message the
		// handler settled itself.
		switch err := m.Ack(); {
		case err == nil:
			j.stats.acked.Add(1)
		case !errors.Is(err, ErrSettled):
			j.stats.ackFailed.Add(1)
		}
		return
	}
	if m.isSettled() {
		return
	}
	switch {
	case errors.Is(err, errConnClosed):
		j.stats.ackFailed.Add(1) // redelivered after its ack wait
	case r.pool.CutOff(err):
		// Cut off by the stop's deadline, not failed: handed back for
		// redelivery at once, never delayed or dead-lettered.
		if m.Nak(0) == nil {
			j.stats.naked.Add(1)
		}
		r.returned.Add(1)
	case err == nil:
		r.ack(ctx, m)
	default:
		r.settleFailed(ctx, m, err)
	}
}

// settleFailed settles a message whose handler failed with err. Apart
// from settle, so that the TerminalError errors.As needs is allocated for
// failures only, not for every message acked.
func (r *jsRun) settleFailed(ctx context.Context, m *Msg, err error) {
	j := r.j
	var term *TerminalError
	switch {
	case errors.As(err, &term) && j.cfg.DeadLetter != "":
		// Never to be run again, so kept where the handler's failures go:
		// terminated once the copy is stored. Until then a redelivery
		// tries only the copy again (see Handle).
		r.terminal.Store(m.js.md.Sequence.Stream, term)
		r.deadLetter(ctx, m, term.Err)
	case errors.As(err, &term):
		if m.Term(logfield.Text(term.Err)) == nil {
			j.stats.terminated.Add(1)
		}
	case j.cfg.DeadLetter != "" && r.maxDeliver.Load() > 0 && m.js.md.NumDelivered >= uint64(r.maxDeliver.Load()):
		r.deadLetter(ctx, m, err)
	default:
		if m.Nak(j.backoff(m)) == nil {
			j.stats.naked.Add(1)
		}
	}
}

// ack acknowledges a handled message, waiting for the server's
// confirmation with DoubleAck.
func (r *jsRun) ack(ctx context.Context, m *Msg) {
	j := r.j
	var err error
	if j.cfg.DoubleAck {
		actx, cancel := context.WithTimeout(context.WithoutCancel(ctx), jsapi.Timeout)
		err = m.DoubleAck(actx)
		cancel()
	} else {
		err = m.Ack()
	}
	if err != nil {
		j.stats.ackFailed.Add(1)
	} else {
		j.stats.acked.Add(1)
	}
}

// backoff is the nak delay for m's delivery count.
func (j *jsHandler) backoff(m *Msg) time.Duration {
	n := 1
	if m.js != nil {
		n = int(m.js.md.NumDelivered)
	}
	return j.cfg.Backoff[min(max(n-1, 0), len(j.cfg.Backoff)-1)]
}
