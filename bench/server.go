package main

import (
	"fmt"
	"net"
	"strconv"
	"sync"
	"time"

	"github.com/nats-io/nats-server/v2/server"
)

// natsServer is the one in-process nats-server every scenario runs
// against: loopback, a random port kept across restarts, JetStream with
// file storage in a temporary directory.
type natsServer struct {
	mu   sync.Mutex
	opts server.Options
	srv  *server.Server
}

func startServer(storeDir string) (*natsServer, error) {
	s := &natsServer{opts: server.Options{
		ServerName: "corral-bench",
		Host:       "127.0.0.1",
		Port:       server.RANDOM_PORT,
		JetStream:  true,
		StoreDir:   storeDir,
		NoLog:      true,
		NoSigs:     true,
	}}
	if err := s.Start(); err != nil {
		return nil, err
	}
	return s, nil
}

// Start starts a stopped server on the same port and store.
func (s *natsServer) Start() error {
	s.mu.Lock()
	o := s.opts
	s.mu.Unlock()
	srv, err := server.NewServer(&o)
	if err != nil {
		return fmt.Errorf("new server: %w", err)
	}
	srv.Start()
	if !srv.ReadyForConnections(30 * time.Second) {
		srv.Shutdown()
		return fmt.Errorf("server not ready")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.srv = srv
	s.opts.Port = srv.Addr().(*net.TCPAddr).Port
	return nil
}

// Shutdown stops the server and waits until it has stopped.
func (s *natsServer) Shutdown() {
	s.mu.Lock()
	srv := s.srv
	s.srv = nil
	s.mu.Unlock()
	if srv != nil {
		srv.Shutdown()
		srv.WaitForShutdown()
	}
}

// URL is the client URL, stable across restarts.
func (s *natsServer) URL() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return "nats://" + net.JoinHostPort(s.opts.Host, strconv.Itoa(s.opts.Port))
}
