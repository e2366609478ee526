package main

import (
	"io"
	"net"
	"sync"
	"time"
)

// relay is the server address the client knows. It carries each
// connection to wherever the child server listens now: the child comes
// back on a port of its own choosing after each kill, because a port it
// gave up may be taken by another program before it could bind it again.
type relay struct {
	ln net.Listener
	wg sync.WaitGroup

	mu     sync.Mutex
	target string
	conns  map[net.Conn]struct{}
}

func newRelay() (*relay, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	r := &relay{ln: ln, conns: map[net.Conn]struct{}{}}
	r.wg.Go(r.accept)
	return r, nil
}

// URL is where the client connects.
func (r *relay) URL() string { return "nats://" + r.ln.Addr().String() }

// setTarget sets the server's address; "" refuses clients.
func (r *relay) setTarget(addr string) {
	r.mu.Lock()
	r.target = addr
	r.mu.Unlock()
}

func (r *relay) accept() {
	for {
		c, err := r.ln.Accept()
		if err != nil {
			return
		}
		r.wg.Go(func() { r.carry(c) })
	}
}

// carry joins c to the server until either side closes; while the server
// is down, c is closed and the client tries again.
func (r *relay) carry(c net.Conn) {
	r.mu.Lock()
	target := r.target
	r.mu.Unlock()
	if target == "" {
		_ = c.Close()
		return
	}
	s, err := net.DialTimeout("tcp", target, time.Second)
	if err != nil {
		_ = c.Close()
		return
	}
	if !r.track(c, s) {
		return
	}
	var both sync.WaitGroup
	both.Go(func() { _, _ = io.Copy(s, c); r.untrack(c, s) })
	_, _ = io.Copy(c, s)
	r.untrack(c, s)
	both.Wait()
}

// track records a joined pair so that close can end it; it closes the pair
// and reports false once the relay is closed.
func (r *relay) track(c, s net.Conn) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.conns == nil {
		_ = c.Close()
		_ = s.Close()
		return false
	}
	r.conns[c], r.conns[s] = struct{}{}, struct{}{}
	return true
}

// untrack closes both sides, ending the copy the other way.
func (r *relay) untrack(c, s net.Conn) {
	_ = c.Close()
	_ = s.Close()
	r.mu.Lock()
	delete(r.conns, c)
	delete(r.conns, s)
	r.mu.Unlock()
}

// close stops accepting, ends every connection and waits for the relay's
// goroutines.
func (r *relay) close() {
	_ = r.ln.Close()
	r.mu.Lock()
	conns := r.conns
	r.conns = nil
	r.mu.Unlock()
	for c := range conns {
		_ = c.Close()
	}
	r.wg.Wait()
}
