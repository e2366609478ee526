package connection

import (
	"errors"
)

var (
	// ErrClosed is returned by Supervisor.Serve when the connection closed
	// for good without a reason from nats.go, and by Fixed.Conn once the
	// application's connection is closed.
	ErrClosed = errors.New("connection: closed")
)
