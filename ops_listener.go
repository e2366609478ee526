package corral

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"sync/atomic"
	"time"

	"github.com/corral-go/corral/internal/event"
	"github.com/corral-go/corral/supervisor"
)

// opsServer serves the ops endpoints at ops.listen, as a child of the
// tree: a listener that fails (its port taken) is restarted by its policy,
// and stopping the tree shuts it down.
type opsServer struct {
	addr string
	// handler is set by New, before the tree can serve.
	handler http.Handler
	page    bool // false: "/" (the status page) is not served
	events  *event.Emitter
	bound   atomic.Pointer[string]
}

// String names the child.
func (s *opsServer) String() string { return "ops" }

// Addr is the address bound, empty while not listening.
func (s *opsServer) Addr() string {
	if a := s.bound.Load(); a != nil {
		return *a
	}
	return ""
}

// Serve listens and serves until ctx ends, then shuts the server down,
// letting requests in progress finish for up to a second.
func (s *opsServer) Serve(ctx context.Context) error {
	var lc net.ListenConfig
	ln, err := lc.Listen(ctx, "tcp", s.addr)
	if err != nil {
		return fmt.Errorf("ops: %w", err)
	}
	addr := ln.Addr().String()
	s.bound.Store(&addr)
	defer s.bound.Store(nil)
	tcp, _ := ln.Addr().(*net.TCPAddr)
	s.events.Emit(OpsListening{EventTime: s.events.Stamp(), Addr: addr, AllInterfaces: tcp != nil && tcp.IP.IsUnspecified()})
	// Requests in progress are not cancelled by the stop: they get the
	// second below to finish.
	base := context.WithoutCancel(ctx)
	srv := &http.Server{Handler: s.serving(), ReadHeaderTimeout: 10 * time.Second,
		BaseContext: func(net.Listener) context.Context { return base }}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	select {
	case err := <-served: // the listener failed
		_ = srv.Close()
		return fmt.Errorf("ops: %w", err)
	case <-ctx.Done():
	}
	stop, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Second)
	defer cancel()
	if err := srv.Shutdown(stop); err != nil {
		_ = srv.Close()
	}
	if err := <-served; !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("ops: %w", err)
	}
	return ctx.Err()
}

// serving is the handler the listener serves: without the page, "/" is
// not found.
func (s *opsServer) serving() http.Handler {
	if s.page {
		return s.handler
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/" {
			http.NotFound(w, r)
			return
		}
		s.handler.ServeHTTP(w, r)
	})
}

// OpsListening is emitted when the ops endpoints are served, at Addr.
// AllInterfaces is true when Addr is every interface's (ops.listen with
// no host, 0.0.0.0 or [::]): the event is then a warning, since the
// endpoints have no authentication of their own and anyone who reaches
// the host reaches them.
type OpsListening struct {
	supervisor.EventTime
	Addr          string
	AllInterfaces bool `log:",omitempty"`
}

// Kind returns "corral.ops_listening".
func (OpsListening) Kind() string { return "corral.ops_listening" }

// Level is warn when the endpoints listen on every interface, else info.
func (e OpsListening) Level() supervisor.Level {
	if e.AllInterfaces {
		return supervisor.WarnLevel
	}
	return supervisor.InfoLevel
}
