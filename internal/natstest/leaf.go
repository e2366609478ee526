package natstest

import (
	"net"
	"net/url"
	"strconv"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
)

// WithDomain sets the server's JetStream domain.
func WithDomain(domain string) Option {
	return func(o *server.Options) { o.JetStreamDomain = domain }
}

// WithLeafListen makes the server accept leaf node connections on a
// reserved loopback port (see Server.LeafURL). It advertises no leaf
// URL to its leaf nodes, which would otherwise reconnect to it directly,
// around a Proxy in between.
func WithLeafListen() Option {
	return func(o *server.Options) {
		o.LeafNode.Host = "127.0.0.1"
		o.LeafNode.Port = 0
		o.LeafNode.NoAdvertise = true
	}
}

// reserveLeafPort fixes a leaf node port left to chance, so that
// LeafURL stays the same across restarts.
func (s *Server) reserveLeafPort() {
	if s.opts.LeafNode.Host != "" && s.opts.LeafNode.Port == 0 {
		s.opts.LeafNode.Port = ReservePort(s.t)
	}
}

// WithLeafRemote makes the server a leaf node of the hub at url (a
// hub's LeafURL, or a Proxy's URL in front of it), binding its default
// account to the hub's. It reconnects every 100ms while the link is down.
func WithLeafRemote(hub string) Option {
	return func(o *server.Options) {
		u := &url.URL{Scheme: "nats-leaf", Host: hostPort(hub)}
		o.LeafNode.Remotes = append(o.LeafNode.Remotes, &server.RemoteLeafOpts{URLs: []*url.URL{u}})
		o.LeafNode.ReconnectInterval = 100 * time.Millisecond
	}
}

// LeafURL is the nats-leaf:// URL leaf nodes connect to, stable across
// restarts.
func (s *Server) LeafURL() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return "nats-leaf://" + net.JoinHostPort(s.opts.LeafNode.Host, strconv.Itoa(s.opts.LeafNode.Port))
}

// LeafNode is a hub and a leaf node with JetStream domains of their own
// ("hub" and "leaf"), linked through a Proxy so that a test can cut the
// link (Link.Cut, Link.Pause) and restore it.
type LeafNode struct {
	t    testing.TB
	Hub  *Server
	Leaf *Server
	Link *Proxy
}

// RunLeafNode starts a hub and its leaf node, and waits until they are
// linked.
func RunLeafNode(t testing.TB) *LeafNode {
	t.Helper()
	hub := RunServer(t, WithName("hub"), WithDomain("hub"), WithLeafListen())
	link := NewProxy(t, hub.LeafURL())
	leaf := RunServer(t, WithName("leaf"), WithDomain("leaf"), WithLeafRemote(link.URL()))
	l := &LeafNode{t: t, Hub: hub, Leaf: leaf, Link: link}
	l.WaitLinked()
	return l
}

// WaitLinked waits until the hub and the leaf node each count the link.
func (l *LeafNode) WaitLinked() {
	l.t.Helper()
	Eventually(l.t, 30*time.Second, func() bool { return l.links(1) }, func() string { return "the leaf node is not linked to its hub" })
}

// WaitUnlinked waits until neither side counts the link.
func (l *LeafNode) WaitUnlinked() {
	l.t.Helper()
	Eventually(l.t, 30*time.Second, func() bool { return l.links(0) }, func() string { return "the leaf link is still up" })
}

// links reports whether each running side counts n leaf connections.
func (l *LeafNode) links(n int) bool {
	for _, s := range []*server.Server{l.Hub.Raw(), l.Leaf.Raw()} {
		if s != nil && s.NumLeafNodes() != n {
			return false
		}
	}
	return true
}
