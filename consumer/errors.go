package consumer

import (
	"errors"

	"github.com/corral-go/corral/internal/pull"
)

var (
	// ErrDuplicateHandler is returned when a handler of that name is
	// already declared. Like ErrNilHandler, it is only returned wrapped
	// under `consumer: handler "name":`, so its text has no prefix of its
	// own: the error reads once.
	ErrDuplicateHandler = errors.New("already declared")
	// ErrNilHandler is returned when the handler, or the function it
	// adapts, is nil.
	ErrNilHandler = errors.New("nil handler")
	// ErrNotJetStream is returned by the ack methods of a core message.
	ErrNotJetStream = errors.New("consumer: not a JetStream message")
	// ErrSettled is returned when a message is acked, naked or terminated
	// a second time.
	ErrSettled = errors.New("consumer: message already acked, naked or terminated")
	// ErrPullStatus wraps a pull request's status the handler cannot
	// recover from (the consumer is push based, a request exceeds the
	// consumer's limits).
	ErrPullStatus = pull.ErrStatus
)

// Terminal wraps err so that the handler's JetStream message is terminated
// (never redelivered) with err as the reason, instead of naked; with a
// dead-letter subject, it is dead-lettered first, at once, whatever its
// delivery count. It returns nil for a nil err.
func Terminal(err error) error {
	if err == nil {
		return nil
	}
	return &TerminalError{Err: err}
}

// TerminalError is an error that terminates a JetStream message. Err is
// the reason given to the server; a nil Err terminates without one.
type TerminalError struct{ Err error }

// Error returns "terminal: " and the reason.
func (e *TerminalError) Error() string {
	if e.Err == nil {
		return "terminal"
	}
	return "terminal: " + e.Err.Error()
}

// Unwrap returns the reason.
func (e *TerminalError) Unwrap() error { return e.Err }
