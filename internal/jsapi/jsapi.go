// Package jsapi holds what Corral's packages share about the JetStream
// API: the error codes they act on, named, and the checks built on them.
package jsapi

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/corral-go/corral/connection"
)

// Timeout bounds a JetStream API call made without a deadline of the
// caller's: a declaration, a lookup, a dead-letter publish.
const Timeout = 10 * time.Second

// ErrConnGone means the connection closed for good: a dependent asks its
// connection.Source for the replacement.
var ErrConnGone = errors.New("connection replaced")

// StreamMissing reports whether err says the stream behind a bucket or
// store is gone. No responders also happens without JetStream; declaring
// again then fails too, with a clearer error.
func StreamMissing(err error) bool {
	return errors.Is(err, jetstream.ErrBucketNotFound) || errors.Is(err, jetstream.ErrStreamNotFound) ||
		errors.Is(err, jetstream.ErrNoStreamResponse) || errors.Is(err, nats.ErrNoResponders)
}

// Unreached wraps err, no responders from a bucket or store in api when
// api is another domain's or account's: there it means as often that the
// link to it is down (a leaf link, a gateway) as that the bucket is gone,
// so the error says so rather than "not found". It returns nil for any
// other err.
func Unreached(api connection.JetStreamAPI, err error) error {
	if api.IsZero() || !errors.Is(err, nats.ErrNoResponders) {
		return nil
	}
	return fmt.Errorf("no answer from %v: its link may be down, or the stream gone: %w", api, err)
}

// Unavailable reports whether err says that JetStream, or the part of a
// cluster a request needs, cannot answer for now, which passes without
// anyone's help: no answer in time, no responders, missed heartbeats, a
// leader changed or a server shutting down, or a cluster not available
// yet (CodeClusterNotAvailable). A lost node shows as any of them.
func Unavailable(err error) bool {
	return errors.Is(err, context.DeadlineExceeded) || errors.Is(err, nats.ErrTimeout) ||
		errors.Is(err, nats.ErrNoResponders) || errors.Is(err, jetstream.ErrNoHeartbeat) ||
		errors.Is(err, jetstream.ErrConsumerLeadershipChanged) || errors.Is(err, jetstream.ErrServerShutdown) ||
		NotAvailable(err)
}

// Storage is the storage a configuration names: memory, or file (the
// default, also for an empty name).
func Storage(name string) jetstream.StorageType {
	if name == "memory" {
		return jetstream.MemoryStorage
	}
	return jetstream.FileStorage
}

// ActsOnStream reports whether header tells a stream what to do with the
// message that carries it (expectations, rollups, TTLs, schedules,
// batches, its Msg-Id): such headers are dropped from a copy sent to
// another stream.
func ActsOnStream(header string) bool {
	for _, prefix := range []string{"Nats-Expected-", "Nats-Rollup", "Nats-TTL", "Nats-Schedule", "Nats-Batch-", "Nats-Msg-Id"} {
		if strings.HasPrefix(header, prefix) {
			return true
		}
	}
	return false
}
