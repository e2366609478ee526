package natstest

import (
	"testing"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// Connect connects to url (a server's or a cluster's URL, or several
// comma-separated) with opts; the connection closes when the test ends.
// A failure to connect fails the test.
func Connect(t testing.TB, url string, opts ...nats.Option) *nats.Conn {
	t.Helper()
	nc, err := nats.Connect(url, opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	return nc
}

// JetStream connects to url (a server's or a cluster's URL, or several
// comma-separated) with opts and returns a JetStream context on that
// connection, which js.Conn returns; the connection closes when the test
// ends. A failure to connect fails the test.
func JetStream(t testing.TB, url string, opts ...nats.Option) jetstream.JetStream {
	t.Helper()
	js, err := jetstream.New(Connect(t, url, opts...))
	if err != nil {
		t.Fatal(err)
	}
	return js
}
