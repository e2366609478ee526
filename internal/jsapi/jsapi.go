// Package jsapi holds what Corral's packages share about the JetStream
// API: the error codes they act on, named, and the checks built on them.
package jsapi

import (
	"errors"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// Timeout bounds a JetStream API call made without a deadline of the
// caller's: a declaration, a lookup, a dead-letter publish.
const Timeout = 10 * time.Second

// Error codes of the JetStream API that nats.go does not name, with the
// name nats-server gives each.
const (
	// CodeResourcesExceeded means the account's JetStream resources are
	// exhausted (JSAccountResourcesExceededErr); it clears only when
	// something else frees room.
	CodeResourcesExceeded jetstream.ErrorCode = 10002
	// CodeInsufficientResources means the server's JetStream storage is
	// exhausted (JSInsufficientResourcesErr).
	CodeInsufficientResources jetstream.ErrorCode = 10023
	// CodeMemoryResourcesExceeded and CodeStorageResourcesExceeded mean the
	// server has no memory or storage left for JetStream
	// (JSMemoryResourcesExceededErr, JSStorageResourcesExceededErr).
	CodeMemoryResourcesExceeded  jetstream.ErrorCode = 10028
	CodeStorageResourcesExceeded jetstream.ErrorCode = 10047
	// CodeStreamMismatch means the expected stream does not match
	// (JSStreamMismatchErr).
	CodeStreamMismatch jetstream.ErrorCode = 10060
	// CodeWrongLastMsgID means the expected last Msg-Id does not match
	// (JSStreamWrongLastMsgIDErrF).
	CodeWrongLastMsgID jetstream.ErrorCode = 10070
	// CodeStoreFailed means the stream could not store the message
	// (JSStreamStoreFailedF); the description is the store's reason:
	// "maximum messages exceeded", "maximum bytes exceeded", "maximum
	// messages per subject exceeded" (a full stream with discard new),
	// "message too large" or "store is closed".
	CodeStoreFailed jetstream.ErrorCode = 10077
	// CodeMsgDeleteFailed means a message could not be deleted, as when it
	// is gone already (JSStreamMsgDeleteFailedF).
	CodeMsgDeleteFailed jetstream.ErrorCode = 10057
)

// ErrConnGone means the connection closed for good: a dependent asks its
// connection.Source for the replacement.
var ErrConnGone = errors.New("connection replaced")

// Code returns the JetStream API error code err carries, if any.
func Code(err error) (jetstream.ErrorCode, bool) {
	var apiErr *jetstream.APIError
	if !errors.As(err, &apiErr) {
		return 0, false
	}
	return apiErr.ErrorCode, true
}

// WrongLastSequence reports whether err is the server refusing a write
// that expected another last sequence: code 10071, or 10164 from a
// replicated (R>1) stream.
func WrongLastSequence(err error) bool {
	code, ok := Code(err)
	return ok && (code == jetstream.JSErrCodeStreamWrongLastSequence ||
		code == jetstream.JSErrCodeStreamWrongLastSequenceConstant)
}

// StreamMissing reports whether err says the stream behind a bucket or
// store is gone. No responders also happens without JetStream; declaring
// again then fails too, with a clearer error.
func StreamMissing(err error) bool {
	return errors.Is(err, jetstream.ErrBucketNotFound) || errors.Is(err, jetstream.ErrStreamNotFound) ||
		errors.Is(err, jetstream.ErrNoStreamResponse) || errors.Is(err, nats.ErrNoResponders)
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
