package consumer

import (
	"errors"
	"testing"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// parseAckSubject reads what nats.go's Msg.Metadata reads, from both
// forms of ack subject, and refuses what it refuses.
func TestParseAckSubjectAgreesWithNATS(t *testing.T) {
	for _, reply := range []string{
		"$JS.ACK.ORDERS.worker.3.1042.17.1733500000123456789.9",
		"$JS.ACK.hub.ACCHASH.ORDERS.worker.1.7.7.1733500000000000001.0.Zx81",
		"$JS.ACK._.ACCHASH.ORDERS.worker.2.8.5.1733500000000000002.12",
		"$JS.ACK.hub.ACCHASH.ORDERS.worker.1.7.7.1733500000000000001.0.a.b",
		"$JS.ACK.ORDERS.worker.x.1.2.3.4",
	} {
		want, err := (&nats.Msg{Reply: reply, Sub: &nats.Subscription{}}).Metadata()
		if err != nil {
			t.Fatalf("%s: nats.go: %v", reply, err)
		}
		var got jetstream.MsgMetadata
		if err := parseAckSubject(reply, &got); err != nil {
			t.Fatalf("%s: %v", reply, err)
		}
		if got.Sequence.Stream != want.Sequence.Stream || got.Sequence.Consumer != want.Sequence.Consumer ||
			got.NumDelivered != want.NumDelivered || got.NumPending != want.NumPending ||
			!got.Timestamp.Equal(want.Timestamp) || got.Stream != want.Stream || got.Consumer != want.Consumer ||
			got.Domain != want.Domain {
			t.Fatalf("%s: got %+v, nats.go reads %+v", reply, got, *want)
		}
	}
	for _, reply := range []string{"", "_INBOX.x", "$JS.ACK.a.b.c", "$JS.ACK.a.b.1.2.3.4.5.6", "$JS.ACKS.ORDERS.worker.3.1042.17.1.9"} {
		_, natsErr := (&nats.Msg{Reply: reply, Sub: &nats.Subscription{}}).Metadata()
		var md jetstream.MsgMetadata
		err := parseAckSubject(reply, &md)
		if err == nil || natsErr == nil {
			t.Fatalf("%q: got %v, nats.go %v: want both to refuse it", reply, err, natsErr)
		}
		if !errors.Is(err, nats.ErrNotJSMessage) {
			t.Fatalf("%q: got %v, want nats.ErrNotJSMessage", reply, err)
		}
	}
}

// Reading the metadata of a message allocates nothing.
func TestParseAckSubjectDoesNotAllocate(t *testing.T) {
	var md jetstream.MsgMetadata
	reply := "$JS.ACK.hub.ACCHASH.ORDERS.worker.1.7.7.1733500000000000001.0.Zx81"
	if n := testing.AllocsPerRun(100, func() { _ = parseAckSubject(reply, &md) }); n != 0 {
		t.Fatalf("%v allocations per parse", n)
	}
}
