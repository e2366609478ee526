package consumer

import (
	"context"
	"time"

	"github.com/corral-go/corral/internal/jsapi"
)

const (
	// ackPendingEvery is how often a JetStream handler reads its
	// consumer's ack-pending count: one API call per handler per period.
	ackPendingEvery = 5 * time.Second
	// serverMaxAckPending is the server's max_ack_pending for a consumer
	// that sets none.
	serverMaxAckPending = 1000
)

// Near and back below max_ack_pending, in tenths of it: apart, so that a
// count hovering at one line does not report an episode a read.
const (
	nearMaxAckPending  = 9
	belowMaxAckPending = 7
)

// readAckPending reads the count once; a failed read is left to the
// puller, which reports what is wrong with the consumer.
func (r *jsRun) readAckPending(ctx context.Context) {
	js := r.js.Load()
	if js == nil {
		return
	}
	ctx, cancel := context.WithTimeout(ctx, jsapi.Timeout)
	defer cancel()
	c, err := (*js).Consumer(ctx, r.j.cfg.Stream, r.j.cfg.Consumer)
	if err != nil {
		return
	}
	info := c.CachedInfo()
	r.j.ackPendingRead(info.NumAckPending, info.Config.MaxAckPending)
}

// ackPendingRead records a read of the consumer's ack-pending count and
// limit, and reports the start or end of an episode near the limit.
func (j *jsHandler) ackPendingRead(pending, limit int) {
	j.ackPending.Store(int64(pending))
	j.maxAckPending.Store(int64(limit))
	near := limit > 0 && pending*10 >= limit*nearMaxAckPending
	below := limit <= 0 || pending*10 < limit*belowMaxAckPending
	switch {
	case near && j.nearMaxAckPending.CompareAndSwap(false, true):
		j.events.Emit(AckPendingHigh{EventTime: j.events.Stamp(), Handler: j.name, Stream: j.cfg.Stream,
			Consumer: j.cfg.Consumer, AckPending: pending, MaxAckPending: limit})
	case below && j.nearMaxAckPending.CompareAndSwap(true, false):
		j.events.Emit(AckPendingNormal{EventTime: j.events.Stamp(), Handler: j.name, Stream: j.cfg.Stream,
			Consumer: j.cfg.Consumer, AckPending: pending, MaxAckPending: limit})
	}
}

// defaultMaxAckPending is the max_ack_pending a consumer is declared with
// when none is configured: the server's, or twice what one instance
// holds (workers + queue) when that is more, so that one instance's own
// pool, with as many again waiting out their nak delays, never reaches
// it. 0 leaves it to the server, as does a limit the default exceeds.
func defaultMaxAckPending(capacity int) int {
	if 2*capacity > serverMaxAckPending {
		return 2 * capacity
	}
	return 0
}
