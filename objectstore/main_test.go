package objectstore_test

import (
	"testing"

	"go.uber.org/goleak"
)

// nats-server 2.15.3 now and then leaves the file store of a stream that
// was deleted and declared again, as these tests do, unstopped after
// Shutdown (its state-flushing loop and access-time registration). Those
// are the server's goroutines, not ours.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m,
		goleak.IgnoreTopFunction("github.com/nats-io/nats-server/v2/server.(*fileStore).flushStreamStateLoop"),
		goleak.IgnoreTopFunction("github.com/nats-io/nats-server/v2/server/ats.Register.func1"))
}
