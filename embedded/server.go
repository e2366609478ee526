package embedded

import (
	"context"
	"fmt"
	"net"
	"path/filepath"
	"strconv"
	"sync"
	"time"

	"github.com/nats-io/nats-server/v2/server"

	"github.com/corral-go/corral"
	"github.com/corral-go/corral/internal/event"
)

// Server runs an in-process nats-server with JetStream as a supervised
// service. It is a suture.Service; its methods are safe for concurrent use.
type Server struct {
	cfg    corral.ServerConfig
	events *event.Emitter

	mu      sync.Mutex
	port    int    // chosen at the first start, reused by restarts
	url     string // set while the server accepts connections
	changed chan struct{}
}

// New validates cfg and returns a server that starts when served. It is
// what corral.WithEmbeddedServer takes: corral.WithEmbeddedServer(New).
func New(cfg corral.ServerConfig) (*Server, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg = withDefaults(cfg)
	if abs, err := filepath.Abs(cfg.StoreDir); err == nil {
		cfg.StoreDir = abs
	}
	return &Server{cfg: cfg, events: event.New(cfg.Events), port: cfg.Port, changed: make(chan struct{})}, nil
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
		return fmt.Errorf("embedded: %w", err)
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
		return fmt.Errorf("%w within %v (store %s)", ErrNotReady, s.cfg.StartTimeout, s.cfg.StoreDir)
	}
	addr := ns.Addr().(*net.TCPAddr)
	url := "nats://" + net.JoinHostPort(s.cfg.Host, strconv.Itoa(addr.Port))
	s.setURL(addr.Port, url)
	s.events.Emit(Ready{EventTime: s.events.Stamp(), URL: url, StoreDir: s.cfg.StoreDir})

	select {
	case <-ctx.Done():
		s.setURL(addr.Port, "")
		ns.Shutdown()
		<-down
		s.events.Emit(Stopped{EventTime: s.events.Stamp(), URL: url})
		return ctx.Err()
	case <-down:
		s.setURL(addr.Port, "")
		s.events.Emit(Stopped{EventTime: s.events.Stamp(), URL: url})
		return ErrStopped
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

// withDefaults fills the fields of c left zero with their defaults.
func withDefaults(c corral.ServerConfig) corral.ServerConfig {
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
