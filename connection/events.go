package connection

import (
	"go.uber.org/zap/zapcore"

	"github.com/corral-go/corral/internal/logfield"
	"github.com/corral-go/corral/supervisor"
)

// Connected is emitted when a connection is established for the first
// time. Generation
// counts the connections the supervisor has made; it is 1 for the first
// and increases each time a closed connection is replaced.
type Connected struct {
	supervisor.EventTime
	URL        string // redacted
	ServerID   string
	ServerName string
	Generation uint64
}

// Disconnected is emitted when the connection to URL is lost; nats.go reconnects by
// itself unless Closing says the connection is being closed.
type Disconnected struct {
	supervisor.EventTime
	URL        string
	Err        error
	Closing    bool `log:",omitempty"`
	Generation uint64
}

// Reconnected is emitted when the connection is back, to URL.
type Reconnected struct {
	supervisor.EventTime
	URL        string
	ServerID   string
	ServerName string
	Generation uint64
	Reconnects uint64
}

// ReconnectFailed is emitted when one attempt to (re)connect failed; Attempt counts them
// since the connection was last up, and URL is the server it was last up
// on. An outage produces one per attempt, so attempts 1, 2, 4, 8... are
// logged as warnings and the rest at debug level.
type ReconnectFailed struct {
	supervisor.EventTime
	URL        string `log:",omitempty"`
	Err        error
	Attempt    int64
	Generation uint64
}

// Closed is emitted when the connection closed for good. Err is nil when the supervisor
// closed it; otherwise the supervisor fails and makes a new connection.
type Closed struct {
	supervisor.EventTime
	URL        string `log:",omitempty"`
	Err        error
	Generation uint64
}

// DiscoveredServers is emitted when the server announces cluster members
// not in the configured list.
type DiscoveredServers struct {
	supervisor.EventTime
	URLs       []string // redacted
	Generation uint64
}

// LameDuck is emitted when the server is shutting down gracefully and
// asks clients to move; nats.go reconnects elsewhere when it closes.
type LameDuck struct {
	supervisor.EventTime
	URL        string
	Generation uint64
}

// SlowConsumer is emitted when nats.go dropped messages for a subscription whose pending
// buffer was full. nats.go reports once per episode.
type SlowConsumer struct {
	supervisor.EventTime
	Subject    string
	Queue      string `log:",omitempty"`
	Dropped    int
	Generation uint64
}

// AsyncError is emitted when nats.go reports an error that belongs to no call, such as a
// permissions violation.
type AsyncError struct {
	supervisor.EventTime
	URL        string `log:",omitempty"`
	Subject    string `log:",omitempty"`
	Err        error
	Generation uint64
}

// Kind returns "connection.connected".
func (Connected) Kind() string { return "connection.connected" }

// Kind returns "connection.disconnected".
func (Disconnected) Kind() string { return "connection.disconnected" }

// Kind returns "connection.reconnected".
func (Reconnected) Kind() string { return "connection.reconnected" }

// Kind returns "connection.reconnect_failed".
func (ReconnectFailed) Kind() string { return "connection.reconnect_failed" }

// Kind returns "connection.closed".
func (Closed) Kind() string { return "connection.closed" }

// Kind returns "connection.discovered_servers".
func (DiscoveredServers) Kind() string { return "connection.discovered_servers" }

// Kind returns "connection.lame_duck".
func (LameDuck) Kind() string { return "connection.lame_duck" }

// Kind returns "connection.slow_consumer".
func (SlowConsumer) Kind() string { return "connection.slow_consumer" }

// Kind returns "connection.async_error".
func (AsyncError) Kind() string { return "connection.async_error" }

// Level returns InfoLevel.
func (Connected) Level() supervisor.Level { return supervisor.InfoLevel }

// Level returns the level the event is logged at.
func (e Disconnected) Level() supervisor.Level {
	if e.Closing {
		return supervisor.InfoLevel
	}
	return supervisor.WarnLevel
}

// Level returns InfoLevel.
func (Reconnected) Level() supervisor.Level { return supervisor.InfoLevel }

// Level returns the level the event is logged at.
func (e ReconnectFailed) Level() supervisor.Level {
	if e.Attempt&(e.Attempt-1) == 0 { // 1, 2, 4, 8...
		return supervisor.WarnLevel
	}
	return supervisor.DebugLevel
}

// Level returns the level the event is logged at.
func (e Closed) Level() supervisor.Level {
	if e.Err != nil {
		return supervisor.ErrorLevel
	}
	return supervisor.InfoLevel
}

// Level returns InfoLevel.
func (DiscoveredServers) Level() supervisor.Level { return supervisor.InfoLevel }

// Level returns WarnLevel.
func (LameDuck) Level() supervisor.Level { return supervisor.WarnLevel }

// Level returns WarnLevel.
func (SlowConsumer) Level() supervisor.Level { return supervisor.WarnLevel }

// Level returns ErrorLevel.
func (AsyncError) Level() supervisor.Level { return supervisor.ErrorLevel }

// MarshalLogObject writes the event's fields for zap.
func (e Connected) MarshalLogObject(enc zapcore.ObjectEncoder) error {
	enc.AddString("url", e.URL)
	enc.AddString("server_id", e.ServerID)
	enc.AddString("server_name", e.ServerName)
	enc.AddUint64("generation", e.Generation)
	return nil
}

// MarshalLogObject writes the event's fields for zap.
func (e Disconnected) MarshalLogObject(enc zapcore.ObjectEncoder) error {
	enc.AddString("url", e.URL)
	logfield.Error(enc, e.Err)
	if e.Closing {
		enc.AddBool("closing", true)
	}
	enc.AddUint64("generation", e.Generation)
	return nil
}

// MarshalLogObject writes the event's fields for zap.
func (e Reconnected) MarshalLogObject(enc zapcore.ObjectEncoder) error {
	enc.AddString("url", e.URL)
	enc.AddString("server_id", e.ServerID)
	enc.AddString("server_name", e.ServerName)
	enc.AddUint64("generation", e.Generation)
	enc.AddUint64("reconnects", e.Reconnects)
	return nil
}

// MarshalLogObject writes the event's fields for zap.
func (e ReconnectFailed) MarshalLogObject(enc zapcore.ObjectEncoder) error {
	if e.URL != "" {
		enc.AddString("url", e.URL)
	}
	logfield.Error(enc, e.Err)
	enc.AddInt64("attempt", e.Attempt)
	enc.AddUint64("generation", e.Generation)
	return nil
}

// MarshalLogObject writes the event's fields for zap.
func (e Closed) MarshalLogObject(enc zapcore.ObjectEncoder) error {
	if e.URL != "" {
		enc.AddString("url", e.URL)
	}
	logfield.Error(enc, e.Err)
	enc.AddUint64("generation", e.Generation)
	return nil
}

// MarshalLogObject writes the event's fields for zap.
func (e DiscoveredServers) MarshalLogObject(enc zapcore.ObjectEncoder) error {
	_ = enc.AddArray("urls", zapcore.ArrayMarshalerFunc(func(a zapcore.ArrayEncoder) error {
		for _, u := range e.URLs {
			a.AppendString(u)
		}
		return nil
	}))
	enc.AddUint64("generation", e.Generation)
	return nil
}

// MarshalLogObject writes the event's fields for zap.
func (e LameDuck) MarshalLogObject(enc zapcore.ObjectEncoder) error {
	enc.AddString("url", e.URL)
	enc.AddUint64("generation", e.Generation)
	return nil
}

// MarshalLogObject writes the event's fields for zap.
func (e SlowConsumer) MarshalLogObject(enc zapcore.ObjectEncoder) error {
	enc.AddString("subject", e.Subject)
	if e.Queue != "" {
		enc.AddString("queue", e.Queue)
	}
	enc.AddInt("dropped", e.Dropped)
	enc.AddUint64("generation", e.Generation)
	return nil
}

// MarshalLogObject writes the event's fields for zap.
func (e AsyncError) MarshalLogObject(enc zapcore.ObjectEncoder) error {
	if e.URL != "" {
		enc.AddString("url", e.URL)
	}
	if e.Subject != "" {
		enc.AddString("subject", e.Subject)
	}
	logfield.Error(enc, e.Err)
	enc.AddUint64("generation", e.Generation)
	return nil
}
