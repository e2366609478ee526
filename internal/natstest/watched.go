package natstest

import (
	"sync/atomic"
	"testing"

	"github.com/nats-io/nats.go"
)

// WatchedConn connects to url and counts the times the connection is
// lost, for tests that show a refusal left it up: a request the server
// refuses for its control line closes the connection.
func WatchedConn(t testing.TB, url string) (*nats.Conn, *atomic.Int32) {
	t.Helper()
	var lost atomic.Int32
	nc, err := nats.Connect(url, nats.DisconnectErrHandler(func(*nats.Conn, error) { lost.Add(1) }))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	return nc, &lost
}

// KeptUp fails the test unless nc answers a round trip and was never lost.
func KeptUp(t testing.TB, nc *nats.Conn, lost *atomic.Int32) {
	t.Helper()
	if err := nc.Flush(); err != nil {
		t.Fatalf("flush after the refusal: %v", err)
	}
	if n, r := lost.Load(), nc.Stats().Reconnects; n != 0 || r != 0 {
		t.Fatalf("connection lost %d times, reconnected %d, want neither", n, r)
	}
}
