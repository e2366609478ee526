package jsapi

import (
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// PausedUntil is when a consumer of configuration cfg resumes, nil when
// it is not paused. A declaration that updates the consumer carries it
// over: the server ends a pause that an update leaves out.
func PausedUntil(cfg jetstream.ConsumerConfig) *time.Time {
	if cfg.PauseUntil == nil || !cfg.PauseUntil.After(time.Now()) {
		return nil
	}
	return cfg.PauseUntil
}
