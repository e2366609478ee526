package supervisor

import (
	"errors"
	"fmt"

	"github.com/corral-go/corral/internal/conf"
)

var (
	// ErrInvalidConfig is wrapped by every configuration error. It is the
	// same value in every Corral package, so errors.Is matches it anywhere.
	ErrInvalidConfig = conf.ErrInvalid

	// ErrRunning is returned by Add on a tree that is serving, and by Serve
	// on a tree that is already serving.
	ErrRunning = errors.New("supervisor: tree is running")

	// ErrDuplicateChild is returned by Add for a name already in the tree.
	ErrDuplicateChild = errors.New("supervisor: duplicate child name")

	// ErrReturned is the failure recorded when a permanent child's Serve
	// returns nil while its context is live.
	ErrReturned = errors.New("supervisor: permanent child returned without error")

	// ErrShutdownIncomplete is returned by Serve when a child did not stop
	// within its shutdown timeout.
	ErrShutdownIncomplete = errors.New("supervisor: children did not stop in time")
)

// Unavailable marks err, a child's failure, as one that passes without
// anyone's help: what the child needs cannot answer for now (a cluster
// electing leaders after it lost a node). The tree logs it as a warning
// rather than an error, and the failures of an episode so marked as
// repeats of one another, whatever their words (see ChildFailed). A nil
// err stays nil.
func Unavailable(err error) error {
	if err == nil {
		return nil
	}
	return &UnavailableError{Err: err}
}

// UnavailableError is a failure marked by Unavailable. Its text is Err's.
type UnavailableError struct{ Err error }

// Error returns Err's text.
func (e *UnavailableError) Error() string { return e.Err.Error() }

// Unwrap returns Err.
func (e *UnavailableError) Unwrap() error { return e.Err }

// unavailable reports whether err is marked by Unavailable.
func unavailable(err error) bool {
	var u *UnavailableError
	return errors.As(err, &u)
}

// PanicError is the failure recorded for a child whose Serve panicked.
type PanicError struct {
	Value any
	Stack []byte
}

// Error returns "panic: " and the panic value.
func (e *PanicError) Error() string { return fmt.Sprintf("panic: %v", e.Value) }

// Stacktrace returns Stack, so that logs write it beside the error.
func (e *PanicError) Stacktrace() []byte { return e.Stack }

// Unwrap returns the panic value when it is an error.
func (e *PanicError) Unwrap() error {
	err, _ := e.Value.(error)
	return err
}
