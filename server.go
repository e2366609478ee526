package corral

import (
	"context"
	"net"
	"time"

	"github.com/thejerf/suture/v4"

	"github.com/corral-go/corral/internal/conf"
	"github.com/corral-go/corral/supervisor"
)

// ServerConfig configures the embedded nats-server (package embedded),
// which the Client runs in process with JetStream when connection.servers
// is empty and WithEmbeddedServer names it. Its zero value is valid.
type ServerConfig struct {
	// Host is the address the server listens on. Default 127.0.0.1.
	Host string `yaml:"host"`
	// Port is the client port. 0: a random free port, chosen at the first
	// start and kept across restarts. Range 0 to 65535. Default 0.
	Port int `yaml:"port"`
	// StoreDir is where JetStream keeps its data. Default "corral-data"
	// under the working directory.
	StoreDir string `yaml:"store_dir"`
	// Name is the server's name. Default "corral-embedded".
	Name string `yaml:"name"`
	// MaxMemory and MaxStore limit JetStream's memory and file storage.
	// Range 0 to the largest int64. Default: the server's (a share of the
	// machine's memory and disk).
	MaxMemory conf.ByteSize `yaml:"max_memory"`
	MaxStore  conf.ByteSize `yaml:"max_store"`
	// SyncAlways makes JetStream fsync every write before acknowledging
	// it. Without it (the default), acknowledged messages survive a crash
	// of the process but not of the machine: the server syncs every 2
	// minutes. It costs most of the write throughput.
	SyncAlways bool `yaml:"sync_always"`
	// StartTimeout bounds how long the server may take to accept
	// connections. Range 0 to 24h. Default 10s.
	StartTimeout time.Duration `yaml:"start_timeout"`
	// Restart is the server's restart policy in a tree.
	Restart supervisor.Policy `yaml:"restart"`

	// Events says where the server's events go. The server's own log
	// lines go to its logger, named "nats-server". corral.New sets it.
	Events supervisor.Events `yaml:"-" json:"-"`
}

// Validate reports every invalid field at once, wrapping ErrInvalidConfig.
func (c ServerConfig) Validate() error {
	p := conf.NewProblems("")
	if c.Port < 0 || c.Port > 65535 {
		p.Addf("port", "must be between 0 (random) and 65535, got %d", c.Port)
	}
	if c.Host != "" && net.ParseIP(c.Host) == nil && c.Host != "localhost" {
		p.Addf("host", "%q is not an IP address", c.Host)
	}
	if c.MaxMemory < 0 {
		p.Addf("max_memory", "must not be negative, got %d", c.MaxMemory)
	}
	if c.MaxStore < 0 {
		p.Addf("max_store", "must not be negative, got %d", c.MaxStore)
	}
	p.Durations(conf.MaxPolicyDuration, conf.NamedDuration{Name: "start_timeout", V: c.StartTimeout})
	p.Merge("restart", c.Restart.Validate())
	return p.Err()
}

// EmbeddedServer is a NATS server the Client runs in process, as the
// first child of its tree, and connects to: *embedded.Server is one.
type EmbeddedServer interface {
	suture.Service
	// String names the server's child in the tree.
	String() string
	// ClientURL returns the URL clients connect to, waiting until the
	// server accepts connections or ctx ends.
	ClientURL(ctx context.Context) (string, error)
}

// WithEmbeddedServer runs a NATS server in process when the configuration
// names no server (connection.servers is empty): New calls start with the
// configuration's server section, adds the server as the first child of
// the tree, so that it stops last, and connects to it. Package embedded
// runs nats-server with JetStream:
//
//	client, err := corral.New(cfg, corral.WithEmbeddedServer(embedded.New))
//
// Only a program that names the embedded package links nats-server; one
// that connects to configured servers does not. With servers configured,
// start is never called. Without this option, New refuses a
// configuration with no servers, saying both ways out.
func WithEmbeddedServer[S EmbeddedServer](start func(ServerConfig) (S, error)) Option {
	return func(o *options) {
		if start == nil {
			o.server = nil
			return
		}
		o.server = func(cfg ServerConfig) (EmbeddedServer, error) {
			srv, err := start(cfg)
			if err != nil {
				return nil, err
			}
			return srv, nil
		}
	}
}

// noServerProblem is New's complaint about a configuration that gives the
// Client nothing to connect to.
const noServerProblem = "empty, and no embedded server is given: list the servers to connect to, " +
	"or run nats-server in process with corral.WithEmbeddedServer(embedded.New) " +
	"(package github.com/corral-go/corral/embedded)"
