package consumer

import (
	"testing"

	"github.com/nats-io/nats.go"
)

func connectInternal(t *testing.T, url string) *nats.Conn {
	t.Helper()
	nc, err := nats.Connect(url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	return nc
}
