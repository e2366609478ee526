package consumer

import (
	"encoding/json"
	"fmt"

	"github.com/nats-io/nats.go"
)

// advisoryBuffer is how many advisories wait for the keeper; past it
// nats.go drops them (they are reports, not messages to process).
const advisoryBuffer = 64

// watchAdvisories subscribes to the server's max-deliveries advisories
// for the consumer, into r.advisories, which the keeper reports (see
// tend): a channel subscription needs no goroutine of nats.go's. It
// returns the function that stops.
func (r *jsRun) watchAdvisories(nc *nats.Conn) func() {
	j := r.j
	subject := fmt.Sprintf("$JS.EVENT.ADVISORY.CONSUMER.MAX_DELIVERIES.%s.%s", j.cfg.Stream, j.cfg.Consumer)
	sub, err := nc.ChanSubscribe(subject, r.advisories)
	if err != nil {
		return func() {}
	}
	return func() { _ = sub.Unsubscribe() }
}

// reportMaxDeliveries emits the MaxDeliveries event an advisory tells of.
func (j *jsHandler) reportMaxDeliveries(msg *nats.Msg) {
	var adv struct {
		StreamSeq  uint64 `json:"stream_seq"`
		Deliveries uint64 `json:"deliveries"`
	}
	if json.Unmarshal(msg.Data, &adv) != nil {
		return
	}
	j.events.Emit(MaxDeliveries{EventTime: j.events.Stamp(), Handler: j.name, Stream: j.cfg.Stream,
		Consumer: j.cfg.Consumer, Sequence: adv.StreamSeq, Deliveries: adv.Deliveries})
}
