package connection

import (
	"errors"

	"github.com/corral-go/corral/internal/conf"
)

var (
	// ErrInvalidConfig is wrapped by every configuration error.
	ErrInvalidConfig = conf.ErrInvalid

	// ErrClosed is returned by Serve when the connection closed for good
	// without a reason from nats.go.
	ErrClosed = errors.New("connection: closed")

	// ErrServerStopped is returned by the embedded server's Serve when the
	// server shut down by itself.
	ErrServerStopped = errors.New("connection: embedded server stopped")

	// ErrServerNotReady is returned when the embedded server does not
	// accept connections within its start timeout.
	ErrServerNotReady = errors.New("connection: embedded server not ready")
)
