package consumer

import (
	"errors"

	"github.com/corral-go/corral/internal/conf"
)

var (
	// ErrInvalidConfig is wrapped by every configuration error.
	ErrInvalidConfig = conf.ErrInvalid
	// ErrDuplicateHandler: a handler of that name is already declared.
	ErrDuplicateHandler = errors.New("consumer: duplicate handler name")
	// ErrNilHandler: the handler function is nil.
	ErrNilHandler = errors.New("consumer: nil handler")
	// ErrNotJetStream is returned by the ack methods of a core message.
	ErrNotJetStream = errors.New("consumer: not a JetStream message")
	// ErrSettled is returned when a message is acked, naked or terminated
	// a second time.
	ErrSettled = errors.New("consumer: message already acked, naked or terminated")
	// ErrPullStatus wraps a pull request's status the handler cannot
	// recover from (the consumer is push based, a request exceeds the
	// consumer's limits).
	ErrPullStatus = errors.New("consumer: pull refused")
)
