package embedded

import (
	"net"
	"time"

	"github.com/corral-go/corral/internal/conf"
	"github.com/corral-go/corral/supervisor"
)

// Config configures the embedded nats-server, which runs in process with
// JetStream when no server URL is configured. Its zero value is valid.
type Config struct {
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
	// lines go to its logger, named "nats-server".
	Events supervisor.Events `yaml:"-" json:"-"`
}

func (c Config) withDefaults() Config {
	if c.Host == "" {
		c.Host = "127.0.0.1"
	}
	if c.StoreDir == "" {
		c.StoreDir = "corral-data"
	}
	if c.Name == "" {
		c.Name = "corral-embedded"
	}
	if c.StartTimeout == 0 {
		c.StartTimeout = 10 * time.Second
	}
	return c
}

// Validate reports every invalid field at once, wrapping ErrInvalidConfig.
func (c Config) Validate() error {
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
