package connection

import "github.com/corral-go/corral/supervisor"

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

// Level returns InfoLevel when the connection is being closed, WarnLevel
// otherwise.
func (e Disconnected) Level() supervisor.Level {
	if e.Closing {
		return supervisor.InfoLevel
	}
	return supervisor.WarnLevel
}

// Level returns WarnLevel for attempts 1, 2, 4, 8..., DebugLevel for the
// others.
func (e ReconnectFailed) Level() supervisor.Level {
	if e.Attempt&(e.Attempt-1) == 0 { // 1, 2, 4, 8...
		return supervisor.WarnLevel
	}
	return supervisor.DebugLevel
}

// Level returns ErrorLevel when the connection closed on an error,
// InfoLevel when the supervisor closed it.
func (e Closed) Level() supervisor.Level {
	if e.Err != nil {
		return supervisor.ErrorLevel
	}
	return supervisor.InfoLevel
}

// Level returns WarnLevel.
func (LameDuck) Level() supervisor.Level { return supervisor.WarnLevel }

// Level returns WarnLevel.
func (SlowConsumer) Level() supervisor.Level { return supervisor.WarnLevel }

// Level returns ErrorLevel.
func (AsyncError) Level() supervisor.Level { return supervisor.ErrorLevel }
