package natstest

import (
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// Proxy forwards loopback TCP connections to a target address, and can cut
// them (reset, and refuse new ones) or pause them (blackhole: nothing is
// forwarded, nothing is reset, as with a dead network path) and restore
// them. Paused bytes are held, not dropped, so a restored connection
// carries on as TCP would after a partition heals.
type Proxy struct {
	target string
	ln     net.Listener
	wg     sync.WaitGroup

	mu     sync.Mutex
	conns  map[net.Conn]struct{}
	mode   proxyMode
	gate   chan struct{} // closed while forwarding; replaced on Pause
	delay  time.Duration // added before every forwarded chunk
	closed bool

	accepted atomic.Int64
}

type proxyMode int

const (
	forwarding proxyMode = iota
	paused
	cut
)

// NewProxy listens on a random loopback port and forwards to target
// ("127.0.0.1:4222" or a URL: nats://, nats-leaf://). It is closed when the test ends.
func NewProxy(t testing.TB, target string) *Proxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("natstest: proxy listen: %v", err)
	}
	gate := make(chan struct{})
	close(gate)
	p := &Proxy{target: hostPort(target), ln: ln, conns: map[net.Conn]struct{}{}, gate: gate}
	p.wg.Add(1)
	go p.accept()
	t.Cleanup(p.Close)
	return p
}

func hostPort(target string) string {
	if _, hp, ok := strings.Cut(target, "://"); ok {
		return hp
	}
	return target
}

// URL is the nats:// URL clients connect to.
func (p *Proxy) URL() string { return "nats://" + p.ln.Addr().String() }

// Accepted counts the connections accepted so far, including refused ones.
func (p *Proxy) Accepted() int64 { return p.accepted.Load() }

func (p *Proxy) accept() {
	defer p.wg.Done()
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		p.accepted.Add(1)
		p.mu.Lock()
		if p.closed || p.mode == cut {
			p.mu.Unlock()
			reset(c)
			continue
		}
		p.mu.Unlock()
		up, err := net.Dial("tcp", p.target)
		if err != nil {
			reset(c)
			continue
		}
		p.mu.Lock()
		if p.closed || p.mode == cut {
			// Cut while dialing: this connection must not survive it.
			p.mu.Unlock()
			reset(c)
			_ = up.Close()
			continue
		}
		p.conns[c], p.conns[up] = struct{}{}, struct{}{}
		p.wg.Add(2)
		p.mu.Unlock()
		go p.pipe(c, up)
		go p.pipe(up, c)
	}
}

// pipe copies src to dst, waiting at the gate before every write.
func (p *Proxy) pipe(src, dst net.Conn) {
	defer p.wg.Done()
	defer p.drop(src, dst)
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 {
			p.mu.Lock()
			gate, delay := p.gate, p.delay
			p.mu.Unlock()
			<-gate
			if delay > 0 {
				time.Sleep(delay) // the fault itself: a slow path
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

func (p *Proxy) drop(a, b net.Conn) {
	p.mu.Lock()
	delete(p.conns, a)
	delete(p.conns, b)
	p.mu.Unlock()
	_ = a.Close()
	_ = b.Close()
}

// Pause blackholes every connection, existing and new: bytes are held and
// nothing is answered or reset.
func (p *Proxy) Pause() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.mode != paused {
		p.gate = make(chan struct{})
	}
	p.mode = paused
}

// Delay adds d of latency to every chunk forwarded from now on, in each
// direction; 0 removes it. Chunks of one direction stay in order, so a
// delay also caps throughput, as a slow link does.
func (p *Proxy) Delay(d time.Duration) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.delay = d
}

// Cut resets every connection and refuses new ones until Restore.
func (p *Proxy) Cut() {
	p.mu.Lock()
	if p.mode == paused {
		close(p.gate)
	}
	p.mode = cut
	conns := p.connsLocked()
	p.mu.Unlock()
	for _, c := range conns {
		reset(c)
	}
}

// Restore forwards again; held bytes flow on.
func (p *Proxy) Restore() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.mode == paused {
		close(p.gate)
	}
	p.mode = forwarding
}

// Close stops the proxy, closes every connection and waits for its
// goroutines.
func (p *Proxy) Close() {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return
	}
	p.closed = true
	if p.mode == paused {
		close(p.gate)
	}
	p.mode = cut
	conns := p.connsLocked()
	p.mu.Unlock()
	_ = p.ln.Close()
	for _, c := range conns {
		_ = c.Close()
	}
	p.wg.Wait()
}

func (p *Proxy) connsLocked() []net.Conn {
	out := make([]net.Conn, 0, len(p.conns))
	for c := range p.conns {
		out = append(out, c)
	}
	return out
}

// reset closes c with an RST rather than a FIN.
func reset(c net.Conn) {
	if tc, ok := c.(*net.TCPConn); ok {
		_ = tc.SetLinger(0)
	}
	_ = c.Close()
}
