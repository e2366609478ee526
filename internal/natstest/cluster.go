package natstest

import (
	"fmt"
	"net"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
)

// Cluster is a JetStream cluster of in-process servers on loopback.
type Cluster struct {
	t     testing.TB
	Nodes []*Server
}

// RunCluster starts an n-node cluster and waits until JetStream has a meta
// leader and every node is current.
func RunCluster(t testing.TB, n int) *Cluster {
	t.Helper()
	c := &Cluster{t: t}
	name := fmt.Sprintf("natstest-%d", time.Now().UnixNano())
	for i := range n {
		var routes []*url.URL
		if i > 0 {
			routes = []*url.URL{c.Nodes[0].clusterURL()}
		}
		node := RunServer(t, WithName(fmt.Sprintf("n%d", i+1)), func(o *server.Options) {
			o.Cluster = server.ClusterOpts{Name: name, Host: "127.0.0.1", Port: server.RANDOM_PORT}
			o.Routes = routes
		})
		c.Nodes = append(c.Nodes, node)
	}
	c.WaitReady()
	return c
}

func (s *Server) clusterURL() *url.URL {
	s.mu.Lock()
	defer s.mu.Unlock()
	return &url.URL{Scheme: "nats", Host: net.JoinHostPort(s.opts.Cluster.Host, strconv.Itoa(s.opts.Cluster.Port))}
}

// URLs is the comma-separated client URLs of every node.
func (c *Cluster) URLs() string {
	urls := make([]string, len(c.Nodes))
	for i, n := range c.Nodes {
		urls[i] = n.URL()
	}
	return strings.Join(urls, ",")
}

// Node returns the node named name (n1, n2, ...), or nil.
func (c *Cluster) Node(name string) *Server {
	for _, n := range c.Nodes {
		if n.opts.ServerName == name {
			return n
		}
	}
	return nil
}

// Stop shuts node i down.
func (c *Cluster) Stop(i int) { c.Nodes[i].Shutdown() }

// Restart starts a stopped node i again, routed to every other node, and
// waits until the cluster is ready.
func (c *Cluster) Restart(i int) {
	c.t.Helper()
	node := c.Nodes[i]
	var routes []*url.URL
	for j, other := range c.Nodes {
		if j != i {
			routes = append(routes, other.clusterURL())
		}
	}
	node.mu.Lock()
	node.opts.Routes = routes
	node.mu.Unlock()
	node.Start()
	c.WaitReady()
}

// WaitReady waits until the running nodes are routed to each other and
// JetStream has a meta leader that every running node follows.
func (c *Cluster) WaitReady() {
	c.t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		var running []*server.Server
		for _, n := range c.Nodes {
			if s := n.Raw(); s != nil {
				running = append(running, s)
			}
		}
		leader, ready := false, true
		for _, s := range running {
			if s.NumRoutes() < len(running)-1 || !s.JetStreamIsCurrent() {
				ready = false
			}
			leader = leader || s.JetStreamIsLeader()
		}
		if ready && leader {
			return
		}
		if time.Now().After(deadline) {
			c.t.Fatalf("natstest: cluster not ready after 30s")
		}
		time.Sleep(25 * time.Millisecond)
	}
}
