package publisher

import (
	"errors"

	"github.com/corral-go/corral/internal/conf"
)

var (
	// ErrInvalidConfig is wrapped by every configuration error.
	ErrInvalidConfig = conf.ErrInvalid
	// ErrBufferFull is returned by Publish when the buffer is full and the
	// policy is error.
	ErrBufferFull = errors.New("publisher: buffer full")
	// ErrTooLarge is returned by Publish for a message larger than the
	// server accepts.
	ErrTooLarge = errors.New("publisher: message larger than the server's max payload")
	// ErrStopped is returned by Publish once the publisher is stopping, and
	// is the error of a message that was not delivered before the stop.
	ErrStopped = errors.New("publisher: stopped")
	// ErrNoStream is the final error of a message whose subject no stream
	// stores.
	ErrNoStream = errors.New("publisher: no stream stores the subject")
)
