package publisher

import (
	"errors"
	"testing"

	"github.com/nats-io/nats.go"

	"github.com/corral-go/corral/internal/natstest"
)

// validHeaderName agrees with nats.go on every byte: what it accepts
// nats.go encodes, what it refuses nats.go refuses.
func TestValidHeaderNameAgreesWithNatsGo(t *testing.T) {
	t.Parallel()
	srv := natstest.RunServer(t)
	nc, err := nats.Connect(srv.URL())
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	names := []string{""}
	for c := range 256 {
		names = append(names, "X"+string([]byte{byte(c)}))
	}
	for _, name := range names {
		err := nc.PublishMsg(&nats.Msg{Subject: "s", Header: nats.Header{name: {"v"}}})
		if err != nil && !errors.Is(err, nats.ErrBadHeaderMsg) {
			t.Fatal(err)
		}
		if encodes := err == nil; encodes != validHeaderName(name) {
			t.Errorf("header %q: nats.go encodes it: %v, validHeaderName: %v", name, encodes, validHeaderName(name))
		}
	}
}
