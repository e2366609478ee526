package objectstore

import (
	"errors"
	"fmt"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/corral-go/corral/internal/jsapi"
)

// Errors that also match nats.go's with errors.Is, so that code written
// against either keeps working.
var (
	// ErrNotFound means there is no such object, or it was replaced or
	// deleted while a get read it. It also matches
	// jetstream.ErrObjectNotFound.
	ErrNotFound = errors.New("objectstore: object not found")
	// ErrDigestMismatch means what was read does not match the object's
	// size or digest. It also matches jetstream.ErrDigestMismatch.
	ErrDigestMismatch = errors.New("objectstore: digest mismatch")
	// ErrStoreNotFound means a bound store does not exist, or the store
	// disappeared (deleted, or a memory store lost in a server restart);
	// unless bound, the next call declares it again.
	ErrStoreNotFound = errors.New("objectstore: store not found")
	// ErrInvalidName means an object name whose subject would be longer
	// than the server accepts in one control line; no request was sent.
	ErrInvalidName = errors.New("objectstore: invalid object name")
)

var (
	// errUnknown: no answer tells whether the object's metadata was stored.
	errUnknown = errors.New("not known whether the object was stored")
	// errChunksGone: the object was replaced or deleted during a get.
	errChunksGone = fmt.Errorf("%w: its chunks are gone (replaced or deleted during the get)", jetstream.ErrObjectNotFound)
)

// wrap gives a nats.go error our matching sentinel as well.
func wrap(op, name string, err error) error {
	switch {
	case jsapi.StreamMissing(err):
		return fmt.Errorf("%w: %s %s: %w", ErrStoreNotFound, op, name, err)
	case errors.Is(err, jetstream.ErrObjectNotFound), errors.Is(err, jetstream.ErrMsgNotFound):
		return fmt.Errorf("%w: %s %s: %w", ErrNotFound, op, name, err)
	case errors.Is(err, jetstream.ErrDigestMismatch):
		return fmt.Errorf("%w: %s %s: %w", ErrDigestMismatch, op, name, err)
	}
	return fmt.Errorf("objectstore: %s %s: %w", op, name, err)
}
