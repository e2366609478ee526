package embedded

import "errors"

// Configuration errors wrap corral.ErrInvalidConfig.
var (
	// ErrStopped is returned by Serve when the server shut down by itself.
	ErrStopped = errors.New("embedded: server stopped")

	// ErrNotReady is returned by Serve when the server does not accept
	// connections within its start timeout.
	ErrNotReady = errors.New("embedded: server not ready")
)
