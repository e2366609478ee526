// Package procs runs what the examples' worker processes share: the
// embedded server, and a link between each process and it that the
// examples fail on purpose.
package procs

import (
	"io"
	"net"
	"sync"
)

// Link stands between a worker and the server, so that the example can
// fail the worker's network: cut it for good (the machine is gone) or
// pause it (the process is stopped, or partitioned, then comes back).
// Cut and Mend do for a leaf node's link what a network outage does.
type Link struct {
	target string
	ln     net.Listener

	mu     sync.Mutex
	conns  []net.Conn
	cut    bool
	paused bool
	resume *sync.Cond
	wg     sync.WaitGroup
}

// NewLink listens on a loopback port of its own and carries what
// arrives there to target (host:port).
func NewLink(target string) (*Link, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	l := &Link{target: target, ln: ln}
	l.resume = sync.NewCond(&l.mu)
	l.wg.Go(l.accept)
	return l, nil
}

// URL is where the worker connects.
func (l *Link) URL() string { return "nats://" + l.ln.Addr().String() }

func (l *Link) accept() {
	for {
		c, err := l.ln.Accept()
		if err != nil {
			return
		}
		s, err := net.Dial("tcp", l.target)
		if err != nil {
			_ = c.Close()
			continue
		}
		l.mu.Lock()
		if l.cut {
			l.mu.Unlock()
			_ = c.Close()
			_ = s.Close()
			continue
		}
		l.conns = append(l.conns, c, s)
		l.mu.Unlock()
		l.wg.Go(func() { l.pipe(s, c) })
		l.wg.Go(func() { l.pipe(c, s) })
	}
}

// pipe copies from src to dst, holding what it read while the link is
// paused.
func (l *Link) pipe(dst io.WriteCloser, src io.ReadCloser) {
	defer dst.Close()
	defer src.Close()
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 {
			l.mu.Lock()
			for l.paused && !l.cut {
				l.resume.Wait()
			}
			cut := l.cut
			l.mu.Unlock()
			if cut {
				return
			}
			if _, werr := dst.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}

// Pause stops carrying bytes either way; connections stay open.
func (l *Link) Pause() {
	l.mu.Lock()
	l.paused = true
	l.mu.Unlock()
}

// Resume carries bytes again.
func (l *Link) Resume() {
	l.mu.Lock()
	l.paused = false
	l.mu.Unlock()
	l.resume.Broadcast()
}

// Cut closes every connection and refuses new ones, until Mend.
func (l *Link) Cut() {
	l.mu.Lock()
	l.cut = true
	conns := l.conns
	l.conns = nil
	l.mu.Unlock()
	l.resume.Broadcast()
	for _, c := range conns {
		_ = c.Close()
	}
}

// Mend lets new connections through again after a Cut.
func (l *Link) Mend() {
	l.mu.Lock()
	l.cut = false
	l.mu.Unlock()
}

// Close cuts the link and waits for its goroutines.
func (l *Link) Close() {
	l.Cut()
	_ = l.ln.Close()
	l.wg.Wait()
}
