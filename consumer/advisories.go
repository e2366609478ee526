package consumer

import (
	"encoding/json"
	"fmt"

	"github.com/nats-io/nats.go"
)

// watchAdvisories reports the server's max-deliveries advisories for the
// consumer; it returns the function that stops.
func (j *jsHandler) watchAdvisories(nc *nats.Conn) func() {
	subject := fmt.Sprintf("$JS.EVENT.ADVISORY.CONSUMER.MAX_DELIVERIES.%s.%s", j.cfg.Stream, j.cfg.Consumer)
	sub, err := nc.Subscribe(subject, func(msg *nats.Msg) {
		var adv struct {
			StreamSeq  uint64 `json:"stream_seq"`
			Deliveries uint64 `json:"deliveries"`
		}
		if json.Unmarshal(msg.Data, &adv) != nil {
			return
		}
		j.events.Emit(MaxDeliveries{EventTime: j.events.Stamp(), Handler: j.name, Stream: j.cfg.Stream,
			Consumer: j.cfg.Consumer, Sequence: adv.StreamSeq, Deliveries: adv.Deliveries})
	})
	if err != nil {
		return func() {}
	}
	return func() { _ = sub.Unsubscribe() }
}
