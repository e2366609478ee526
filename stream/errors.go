package stream

import "github.com/corral-go/corral/internal/conf"

// ErrInvalidConfig is wrapped by every configuration error. It is the same
// value in every Corral package.
var ErrInvalidConfig = conf.ErrInvalid
