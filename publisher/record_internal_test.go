package publisher

import (
	"encoding/json"
	"slices"
	"testing"

	"github.com/nats-io/nats.go"
)

// A record reads back as the message it was written from, and a record
// cut anywhere does not read.
func TestRecordRoundTrip(t *testing.T) {
	for _, m := range []*nats.Msg{
		{Subject: "s"},
		{Subject: "orders.created", Data: []byte("data"), Header: nats.Header{"Nats-Msg-Id": {"id-1"}, "K": {"a", "b"}}},
	} {
		var hdr []byte
		if len(m.Header) > 0 {
			var err error
			if hdr, err = json.Marshal(m.Header); err != nil {
				t.Fatal(err)
			}
		}
		rec, err := encodeRecord(42, m, hdr)
		if err != nil {
			t.Fatal(err)
		}
		e, n, err := readRecord(append(slices.Clone(rec), 0, 0, 0))
		if err != nil || n != len(rec) {
			t.Fatalf("%s: read %d of %d bytes: %v", m.Subject, n, len(rec), err)
		}
		if e.seq != 42 || e.msg.Subject != m.Subject || string(e.msg.Data) != string(m.Data) ||
			e.msg.Header.Get("Nats-Msg-Id") != m.Header.Get("Nats-Msg-Id") || len(e.msg.Header["K"]) != len(m.Header["K"]) {
			t.Fatalf("read %d %q %q %v, wrote 42 %q %q %v", e.seq, e.msg.Subject, e.msg.Data, e.msg.Header, m.Subject, m.Data, m.Header)
		}
		if e.size != msgSize(m) {
			t.Fatalf("%s: counts %d bytes, accepted it counted %d", m.Subject, e.size, msgSize(m))
		}
		for cut := range len(rec) {
			if _, _, err := readRecord(rec[:cut]); err == nil {
				t.Fatalf("%s: a record cut at %d of %d bytes reads", m.Subject, cut, len(rec))
			}
		}
	}
}
