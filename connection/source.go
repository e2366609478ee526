package connection

import (
	"context"

	"github.com/nats-io/nats.go"
)

// LocalServer is a server in the same process, such as the embedded one:
// ClientURL waits until it accepts connections, or ctx ends.
type LocalServer interface {
	ClientURL(ctx context.Context) (string, error)
}

// Source is the one contract between the connection and everything that
// uses it: handlers, the publisher, buckets, stores and watches take a
// Source and never hold a *nats.Conn across its replacement. [Supervisor]
// implements it for the connection it keeps alive, [Fixed] for a
// connection the application manages itself.
type Source interface {
	// Conn returns the live connection, waiting until there is one or ctx
	// ends. gone is closed once that connection has closed for good; the
	// caller then calls Conn again for its replacement. Across ordinary
	// reconnects the same *nats.Conn stays in use.
	Conn(ctx context.Context) (nc *nats.Conn, gone <-chan struct{}, err error)
	// Observe returns the connection's status and a channel closed at
	// its next change, so that a dependent learns of a reconnect at once.
	Observe() (Status, <-chan struct{})
	// OnAsyncError calls fn with every error nats.go reports
	// asynchronously that belongs to no subscription, such as a publish
	// permission violation, until release is called. fn runs on nats.go's
	// callback goroutine and must not block.
	OnAsyncError(fn func(nc *nats.Conn, err error)) (release func())
	// ClaimSlowConsumer routes nats.go's slow-consumer errors for sub to
	// report, until release is called: a handler counts them in its own
	// slow-consumer episode.
	ClaimSlowConsumer(sub *nats.Subscription, report func()) (release func())
}
