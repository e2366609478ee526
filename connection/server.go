package connection

import (
	"context"
	"fmt"
	"net"
	"path/filepath"
	"strconv"
	"sync"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"go.uber.org/zap"

	"github.com/corral-go/corral/internal/conf"
	"github.com/corral-go/corral/supervisor"
)

// ServerConfig configures the embedded nats-server, which runs in process
// with JetStream when no server URL is configured.
type ServerConfig struct {
	// Host is the address the server listens on. Default 127.0.0.1.
	Host string `yaml:"host"`
	// Port is the client port. 0: a random free port, chosen at the first
	// start and kept across restarts. Default 0.
	Port int `yaml:"port"`
	// StoreDir is where JetStream keeps its data. Default "corral-data"
	// under the working directory.
	StoreDir string `yaml:"store_dir"`
	// Name is the server's name. Default "corral-embedded".
	Name string `yaml:"name"`
	// MaxMemory and MaxStore limit JetStream's memory and file storage.
	// Default: the server's (a share of the machine's memory and disk).
	MaxMemory conf.ByteSize `yaml:"max_memory"`
	MaxStore  conf.ByteSize `yaml:"max_store"`
	// SyncAlways makes JetStream fsync every write before acknowledging
	// it. Without it (the default), acknowledged messages survive a crash
	// of the process but not of the machine: the server syncs every 2
	// minutes. It costs most of the write throughput.
	SyncAlways bool `yaml:"sync_always"`
	// StartTimeout bounds how long the server may take to accept
	// connections. Default 10s.
	StartTimeout time.Duration `yaml:"start_timeout"`
	// Restart is the server's restart policy in a tree.
	Restart supervisor.Policy `yaml:"restart"`

	// Events receives the server's events and logs (nil: discarded). The
	// server's own log lines go to its logger, named "nats-server".
	Events *supervisor.Events `yaml:"-"`
}

func (c ServerConfig) withDefaults() ServerConfig {
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
	if c.Events == nil {
		c.Events = supervisor.NewEvents(nil, nil, nil)
	}
	return c
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
	if c.StartTimeout < 0 {
		p.Addf("start_timeout", "must not be negative, got %v", c.StartTimeout)
	}
	p.Merge("restart", c.Restart.Validate())
	return p.Err()
}

// Server runs an in-process nats-server with JetStream as a supervised
// service. It is a suture.Service; its methods are safe for concurrent use.
type Server struct {
	cfg    ServerConfig
	events *supervisor.Events

	mu      sync.Mutex
	port    int    // chosen at the first start, reused by restarts
	url     string // set while the server accepts connections
	changed chan struct{}
}

// NewServer validates cfg and returns a server that starts when served.
func NewServer(cfg ServerConfig) (*Server, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg = cfg.withDefaults()
	if abs, err := filepath.Abs(cfg.StoreDir); err == nil {
		cfg.StoreDir = abs
	}
	return &Server{cfg: cfg, events: cfg.Events, port: cfg.Port, changed: make(chan struct{})}, nil
}

// String names the service in the tree.
func (s *Server) String() string { return "server" }

// Serve starts the server, waits until it accepts connections, and runs it
// until ctx ends; then it shuts it down and returns ctx.Err(). It returns
// an error if the server cannot start or shuts down by itself.
func (s *Server) Serve(ctx context.Context) error {
	s.mu.Lock()
	port := s.port
	s.mu.Unlock()
	if port == 0 {
		port = server.RANDOM_PORT
	}
	opts := &server.Options{
		ServerName:         s.cfg.Name,
		Host:               s.cfg.Host,
		Port:               port,
		JetStream:          true,
		StoreDir:           s.cfg.StoreDir,
		JetStreamMaxMemory: int64(s.cfg.MaxMemory),
		JetStreamMaxStore:  int64(s.cfg.MaxStore),
		SyncAlways:         s.cfg.SyncAlways,
		NoSigs:             true,
	}
	if opts.JetStreamMaxMemory == 0 {
		opts.JetStreamMaxMemory = -1
	}
	if opts.JetStreamMaxStore == 0 {
		opts.JetStreamMaxStore = -1
	}
	ns, err := server.NewServer(opts)
	if err != nil {
		return fmt.Errorf("connection: embedded server: %w", err)
	}
	ns.SetLogger(serverLogger{s.events.Logger().Named("nats-server").Sugar()}, false, false)
	ns.Start()

	down := make(chan struct{})
	go func() {
		ns.WaitForShutdown()
		close(down)
	}()
	if !ns.ReadyForConnections(s.cfg.StartTimeout) {
		ns.Shutdown()
		<-down
		return fmt.Errorf("%w within %v (store %s)", ErrServerNotReady, s.cfg.StartTimeout, s.cfg.StoreDir)
	}
	addr := ns.Addr().(*net.TCPAddr)
	url := "nats://" + net.JoinHostPort(s.cfg.Host, strconv.Itoa(addr.Port))
	s.setURL(addr.Port, url)
	s.events.Emit(ServerReady{EventTime: s.events.Now(), URL: url, StoreDir: s.cfg.StoreDir})

	select {
	case <-ctx.Done():
		s.setURL(addr.Port, "")
		ns.Shutdown()
		<-down
		s.events.Emit(ServerStopped{EventTime: s.events.Now(), URL: url})
		return ctx.Err()
	case <-down:
		s.setURL(addr.Port, "")
		s.events.Emit(ServerStopped{EventTime: s.events.Now(), URL: url})
		return ErrServerStopped
	}
}

func (s *Server) setURL(port int, url string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.port, s.url = port, url
	close(s.changed)
	s.changed = make(chan struct{})
}

// ClientURL returns the URL clients connect to, waiting until the server
// accepts connections or ctx ends.
func (s *Server) ClientURL(ctx context.Context) (string, error) {
	for {
		s.mu.Lock()
		url, changed := s.url, s.changed
		s.mu.Unlock()
		if url != "" {
			return url, nil
		}
		select {
		case <-ctx.Done():
			return "", ctx.Err()
		case <-changed:
		}
	}
}

// StoreDir is the absolute JetStream store directory.
func (s *Server) StoreDir() string { return s.cfg.StoreDir }

// serverLogger sends nats-server's log lines to zap. Fatal lines are
// logged as errors: the library must not exit the process.
type serverLogger struct{ l *zap.SugaredLogger }

func (g serverLogger) Noticef(f string, v ...any) { g.l.Infof(f, v...) }
func (g serverLogger) Warnf(f string, v ...any)   { g.l.Warnf(f, v...) }
func (g serverLogger) Fatalf(f string, v ...any)  { g.l.Errorf(f, v...) }
func (g serverLogger) Errorf(f string, v ...any)  { g.l.Errorf(f, v...) }
func (g serverLogger) Debugf(f string, v ...any)  { g.l.Debugf(f, v...) }
func (g serverLogger) Tracef(f string, v ...any)  { g.l.Debugf(f, v...) }
