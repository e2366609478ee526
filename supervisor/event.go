package supervisor

import (
	"time"

	"go.uber.org/zap"
)

// Event is something that happened in a Corral tree: a child failed, a
// connection dropped, a handler fell behind. An event is plain data: a
// struct that embeds [EventTime], with its fields and a one-line Kind
// method, and a Level method when its level is not info or depends on its
// fields. A [Hook] receives every event and tells them apart with a type
// switch. Events are also logged, at their Level, with the fields that
// [EventFields] finds in the struct (and its log tags), so logs and hooks
// never disagree; a hook that logs an event itself uses EventFields too.
//
// Corral's packages define the events; a type of the application's that
// embeds EventTime satisfies Event too, but nothing in Corral emits it.
type Event interface {
	// Kind is a stable dotted name, such as "connection.disconnected".
	Kind() string
	// Level is how serious the event is; it is logged at this level.
	Level() Level
	// When is the time the event happened.
	When() time.Time
	sealed()
}

// EventTime is embedded by every event: it carries the event's time, gives
// it the info level unless it says otherwise, and seals the [Event]
// interface to the types that embed it. It is no field of the event's log
// line: loggers stamp lines with their own time.
type EventTime struct {
	At time.Time
}

// When returns At.
func (e EventTime) When() time.Time { return e.At }

// Level returns InfoLevel, the level of most events. An event type whose
// level is another, or depends on its fields, has a Level method of its
// own.
func (EventTime) Level() Level { return InfoLevel }

func (EventTime) sealed() {}

// Level is the severity of an [Event]. Its values are zap's, so an event is
// logged at the same level by any zap logger.
type Level int8

// The levels of events, least serious first.
const (
	// DebugLevel is for what only matters when looking into a problem.
	DebugLevel Level = iota - 1
	// InfoLevel is for the ordinary life of the tree.
	InfoLevel
	// WarnLevel is for what is recovered from but worth a look.
	WarnLevel
	// ErrorLevel is for failures.
	ErrorLevel
)

// String returns the level's name: debug, info, warn or error.
func (l Level) String() string {
	switch l {
	case DebugLevel:
		return "debug"
	case InfoLevel:
		return "info"
	case WarnLevel:
		return "warn"
	case ErrorLevel:
		return "error"
	}
	return "unknown"
}

// Hook receives every event. It is called synchronously from the
// goroutine that saw the event (a nats.go callback, a worker, the
// supervisor), so it must return quickly and must not block. A hook that
// panics is logged with its stack and the panic goes no further.
type Hook func(Event)

// Events says where a component's events go: each is logged to Logger at
// its level and then passed to Hook. The zero value discards both and
// stamps events with [time.Now]. Every component's configuration holds
// one; corral.New fills them from WithLogger, WithEventHook and WithClock.
type Events struct {
	// Logger receives a line per event. Default none.
	Logger *zap.Logger `json:"-"`
	// Hook receives every event. Default none.
	Hook Hook `json:"-"`
	// Clock stamps events and status. Default [time.Now].
	Clock func() time.Time `json:"-"`
}
