package kv

import (
	"errors"
	"fmt"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/corral-go/corral/internal/jsapi"
)

// Errors that also match nats.go's with errors.Is, so that code written
// against either keeps working.
var (
	// ErrKeyNotFound means the key has no value (never set, deleted or
	// expired). It also matches jetstream.ErrKeyNotFound.
	ErrKeyNotFound = errors.New("kv: key not found")
	// ErrKeyExists means Create found a value already. It also matches
	// jetstream.ErrKeyExists.
	ErrKeyExists = errors.New("kv: key exists")
	// ErrRevisionMismatch means CompareAndSet found another revision. It
	// also matches jetstream.ErrKeyRevisionMismatch and, as on a bucket
	// with one replica, jetstream.ErrKeyExists, whatever the replicas.
	ErrRevisionMismatch = errors.New("kv: revision mismatch")
	// ErrInvalidKey means a key that [ValidKey] refuses; no request was
	// sent.
	ErrInvalidKey = errors.New("kv: invalid key")
	// ErrValueTooLarge means the value is larger than the bucket's
	// MaxValueSize or the server's max payload.
	ErrValueTooLarge = errors.New("kv: value too large")
	// ErrBucketNotFound means a bound bucket does not exist, or the bucket
	// disappeared (deleted, or a memory bucket lost in a server restart);
	// unless bound, the next call declares it again. It also matches
	// jetstream.ErrBucketNotFound when nats.go returned that.
	ErrBucketNotFound = errors.New("kv: bucket not found")
	// ErrTooManyConflicts means Update gave up after its retries.
	ErrTooManyConflicts = errors.New("kv: too many conflicting updates")
	// ErrLockLost is returned by Release once the lease was lost.
	ErrLockLost = errors.New("kv: lock lost")
)

// wrap gives a nats.go error our matching sentinel as well.
func wrap(op, key string, err error) error {
	var ours error
	var apiErr *jetstream.APIError
	switch {
	case errors.Is(err, jetstream.ErrKeyNotFound), errors.Is(err, jetstream.ErrKeyDeleted):
		ours = ErrKeyNotFound
	case jsapi.StreamMissing(err):
		ours = ErrBucketNotFound
	case errors.As(err, &apiErr) && apiErr.ErrorCode == jetstream.JSErrCodeStreamMessageExceedsMaximum,
		errors.Is(err, nats.ErrMaxPayload):
		ours = ErrValueTooLarge
	}
	if ours == nil {
		return fmt.Errorf("kv: %s %s: %w", op, key, err)
	}
	return fmt.Errorf("%w: %s %s: %w", ours, op, key, err)
}

// asKeyExists makes a wrong-last-revision error match
// jetstream.ErrKeyExists, as code 10071 does and 10164 does not, so that
// callers matching it see one behaviour whatever the bucket's replicas.
func asKeyExists(err error) error {
	if errors.Is(err, jetstream.ErrKeyExists) {
		return err
	}
	return keyExists{err}
}

// keyExists is err, also matching jetstream.ErrKeyExists, with err's text.
type keyExists struct{ err error }

func (e keyExists) Error() string        { return e.err.Error() }
func (e keyExists) Unwrap() error        { return e.err }
func (e keyExists) Is(target error) bool { return target == jetstream.ErrKeyExists }
