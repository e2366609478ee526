package natstest

import "go.uber.org/goleak"

// IgnoreServerLeaks are goleak options for TestMain: nats-server 2.15.3
// now and then leaves a stream's file store running after Shutdown (its
// state-flushing loop and its access-time registration), when a stream
// is declared while the server shuts down or right after one of the same
// name was deleted, as tests of re-declaration do. Those goroutines are
// the server's; any other leak still fails the package.
func IgnoreServerLeaks() []goleak.Option {
	return []goleak.Option{
		goleak.IgnoreTopFunction("github.com/nats-io/nats-server/v2/server.(*fileStore).flushStreamStateLoop"),
		goleak.IgnoreTopFunction("github.com/nats-io/nats-server/v2/server/ats.Register.func1"),
	}
}
