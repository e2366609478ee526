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
)
