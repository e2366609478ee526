package natstest

import (
	"fmt"
	"net"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
)

// Server is an in-process nats-server with JetStream on a reserved
// loopback port (see [ReservePort]) and a temporary store directory.
type Server struct {
	t    testing.TB
	mu   sync.Mutex
	opts server.Options // as last started, with the port fixed
	srv  *server.Server
}

// Option changes the options of a server before it starts.
type Option func(*server.Options)

// RunServer starts a server and stops it when the test ends.
func RunServer(t testing.TB, opts ...Option) *Server {
	t.Helper()
	s := newServer(t, opts...)
	s.start()
	return s
}

func newServer(t testing.TB, opts ...Option) *Server {
	o := server.Options{
		ServerName: "natstest",
		Host:       "127.0.0.1",
		Port:       server.RANDOM_PORT,
		JetStream:  true,
		StoreDir:   t.TempDir(),
		NoLog:      true,
		NoSigs:     true,
	}
	for _, opt := range opts {
		opt(&o)
	}
	if o.Port == server.RANDOM_PORT {
		o.Port = ReservePort(t) // Restart binds it again
	}
	s := &Server{t: t, opts: o}
	s.reserveLeafPort()
	t.Cleanup(s.Shutdown)
	return s
}

func (s *Server) start() {
	s.t.Helper()
	s.launch()
	s.waitReady()
}

// launch starts the server without waiting for it to accept clients: a
// clustered JetStream server is not ready before it has peers.
func (s *Server) launch() {
	s.t.Helper()
	s.mu.Lock()
	o := s.opts
	s.mu.Unlock()
	srv, err := server.NewServer(&o)
	if err != nil {
		s.t.Fatalf("natstest: new server: %v", err)
	}
	srv.Start()
	s.mu.Lock()
	s.srv = srv
	s.mu.Unlock()
}

func (s *Server) waitReady() {
	s.t.Helper()
	srv := s.Raw()
	if !srv.ReadyForConnections(30 * time.Second) {
		s.t.Fatalf("natstest: server %s not ready", s.opts.ServerName)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.opts.Port = srv.Addr().(*net.TCPAddr).Port
	if addr := srv.ClusterAddr(); addr != nil {
		s.opts.Cluster.Port = addr.Port
	}
}

// URL is the client URL, stable across restarts.
func (s *Server) URL() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return "nats://" + net.JoinHostPort(s.opts.Host, strconv.Itoa(s.opts.Port))
}

// Port is the client port, stable across restarts.
func (s *Server) Port() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.opts.Port
}

// Raw is the running server, nil while it is shut down.
func (s *Server) Raw() *server.Server {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.srv
}

// Shutdown stops the server and waits until it has stopped. It is a no-op
// on a stopped server.
func (s *Server) Shutdown() {
	s.mu.Lock()
	srv := s.srv
	s.srv = nil
	s.mu.Unlock()
	if srv != nil {
		srv.Shutdown()
		srv.WaitForShutdown()
	}
}

// Start starts a stopped server on the same port and store.
func (s *Server) Start() {
	s.t.Helper()
	if s.Raw() != nil {
		s.t.Fatalf("natstest: server already running")
	}
	s.start()
}

// Restart stops the server and starts it again on the same port and store.
func (s *Server) Restart() {
	s.t.Helper()
	s.Shutdown()
	s.start()
}

// WithUser requires a user and password.
func WithUser(user, password string) Option {
	return func(o *server.Options) {
		o.Username, o.Password = user, password
	}
}

// WithoutJetStream starts a core-only server.
func WithoutJetStream() Option {
	return func(o *server.Options) { o.JetStream = false }
}

// WithPort starts the server on a given port (0: a reserved one).
func WithPort(port int) Option {
	return func(o *server.Options) {
		if port == 0 {
			port = server.RANDOM_PORT
		}
		o.Port = port
	}
}

// WithName sets the server name.
func WithName(name string) Option {
	return func(o *server.Options) { o.ServerName = name }
}

// String describes the server for test logs.
func (s *Server) String() string { return fmt.Sprintf("natstest server %s", s.URL()) }

// WithConfig applies a nats-server configuration (accounts, their
// exports and imports), as a server's configuration file would, in place
// of the options before it; the test's name, loopback port and store,
// and the options after it, still apply. A configuration that does not
// parse fails the test.
func WithConfig(t testing.TB, conf string) Option {
	t.Helper()
	var parsed server.Options
	if err := parsed.ProcessConfigString(conf); err != nil {
		t.Fatalf("natstest: configuration: %v", err)
	}
	return func(o *server.Options) {
		keep := *o
		*o = parsed
		o.ServerName, o.Host, o.Port, o.StoreDir = keep.ServerName, keep.Host, keep.Port, keep.StoreDir
		o.JetStream, o.NoLog, o.NoSigs = true, true, true
	}
}
