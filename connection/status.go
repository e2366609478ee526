package connection

import (
	"time"

	"github.com/nats-io/nats.go"
)

// State is where the supervised connection is.
type State string

const (
	// StateConnecting means a connection is being made and has not yet connected.
	StateConnecting State = "connecting"
	// StateConnected means the connection is up.
	StateConnected State = "connected"
	// StateReconnecting means the connection dropped; nats.go is reconnecting.
	StateReconnecting State = "reconnecting"
	// StateDraining means the supervisor is stopping and drains the connection.
	StateDraining State = "draining"
	// StateClosed means the connection closed for good; a new one follows.
	StateClosed State = "closed"
	// StateStopped means the supervisor is not running.
	StateStopped State = "stopped"
)

// Status is a snapshot of the supervised connection.
type Status struct {
	State State
	// Since is when the connection entered State.
	Since time.Time
	// URL is the server connected to, or last connected to, with none of
	// its userinfo (not even the user name): a status is served by the
	// ops endpoints, which have no authentication of their own.
	URL        string
	ServerID   string
	ServerName string
	// Generation counts the connections made; it increases each time a
	// closed connection is replaced.
	Generation uint64
	// Discovered are the servers beyond the configured ones that the
	// cluster announced (without userinfo), as the connection's pool held
	// them when it was last up. They are kept across replacements: a new
	// connection dials the configured servers and these, so that it finds
	// the cluster when every configured server is gone. One announced
	// once stays while connections are replaced, until nats.go gives up
	// on it (max_reconnects). Over TLS each is verified against its own
	// host unless tls.server_name is set.
	Discovered []string
	// LastError is the error the last connection closed or dropped with.
	LastError string
	// Reconnects counts the reconnections nats.go made since the
	// Supervisor was made, across its connections; Stats.Reconnects
	// counts the current connection's.
	Reconnects uint64
	// Stats are nats.go's counters for the current connection.
	Stats nats.Statistics
}
