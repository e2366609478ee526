// Package event emits the events of Corral's components: each is logged at
// its level with its fields, then passed to the application's hook.
package event

import (
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"

	"github.com/corral-go/corral/internal/logfield"
	"github.com/corral-go/corral/supervisor"
)

// Emitter sends a component's events where its supervisor.Events says.
// A nil *Emitter discards them. It is safe for concurrent use.
type Emitter struct {
	log   *zap.Logger
	hook  supervisor.Hook
	clock func() time.Time
}

// New returns an emitter for where e says events go.
func New(e supervisor.Events) *Emitter {
	em := &Emitter{log: e.Logger, hook: e.Hook, clock: e.Clock}
	if em.log == nil {
		em.log = zap.NewNop()
	}
	if em.clock == nil {
		em.clock = time.Now
	}
	return em
}

// Emit logs ev at its level with its fields, then calls the hook. A hook
// or logger that panics is reported, not passed on to the emitting
// goroutine (a nats.go callback, a worker).
func (e *Emitter) Emit(ev supervisor.Event) {
	if e == nil {
		return
	}
	defer func() {
		if v := recover(); v != nil {
			logfield.HookPanicked(e.log, ev.Kind(), v)
		}
	}()
	logfield.Write(e.log, zapcore.Level(ev.Level()), ev.Kind(), supervisor.EventFields(ev))
	if e.hook != nil {
		e.hook(ev)
	}
}

// Stamp is the time an event happening now carries.
func (e *Emitter) Stamp() supervisor.EventTime {
	if e == nil {
		return supervisor.EventTime{At: time.Now()}
	}
	return supervisor.EventTime{At: e.clock()}
}

// Logger is where events are logged, for a component that logs more (the
// embedded server's own lines).
func (e *Emitter) Logger() *zap.Logger {
	if e == nil {
		return zap.NewNop()
	}
	return e.log
}
