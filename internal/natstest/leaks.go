package natstest

// IgnoreServerLeaks returns the top functions of the goroutines
// nats-server 2.15.3 may leave running, for leakcheck.VerifyTestMain (or
// goleak.IgnoreTopFunction). It now and then leaves a stream's file
// store running after Shutdown (its state-flushing loop and its
// access-time registration), when a stream is declared while the server
// shuts down or right after one of the same name was deleted, as tests
// of re-declaration do. Those goroutines are the server's; any other
// leak still fails the package. The slice is new on each call.
func IgnoreServerLeaks() []string {
	return []string{
		"github.com/nats-io/nats-server/v2/server.(*fileStore).flushStreamStateLoop",
		"github.com/nats-io/nats-server/v2/server/ats.Register.func1",
	}
}
