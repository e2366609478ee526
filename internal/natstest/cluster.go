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
	// Clustered JetStream will not start without routes, so every node
	// gets the route port of every node (itself included, which the server
	// skips) before any starts.
	ports := make([]int, n)
	for i := range ports {
		ports[i] = ReservePort(t)
	}
	var routes []*url.URL
	for _, p := range ports {
		routes = append(routes, &url.URL{Scheme: "nats", Host: net.JoinHostPort("127.0.0.1", strconv.Itoa(p))})
	}
	for i := range n {
		node := newServer(t, WithName(fmt.Sprintf("n%d", i+1)), func(o *server.Options) {
			o.Cluster = server.ClusterOpts{Name: name, Host: "127.0.0.1", Port: ports[i]}
			o.Routes = routes
		})
		node.launch()
		c.Nodes = append(c.Nodes, node)
	}
	for _, node := range c.Nodes {
		node.waitReady()
	}
	c.WaitReady()
	return c
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

// Stop shuts node i down and waits until the other nodes have dropped
// their routes to it (and so no longer advertise it to clients).
func (c *Cluster) Stop(i int) {
	c.t.Helper()
	c.Nodes[i].Shutdown()
	c.WaitReady()
}

// Restart starts a stopped node i again and waits until the cluster is
// ready.
func (c *Cluster) Restart(i int) {
	c.t.Helper()
	c.Nodes[i].Start()
	c.WaitReady()
}

// WaitReady waits until each running node is routed to exactly the other
// running nodes and JetStream has a meta leader that every running node
// follows and that counts every running node online for placement.
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
			if s.NumRemotes() != len(running)-1 || !s.JetStreamIsCurrent() || !metaFormed(s, len(c.Nodes)) {
				ready = false
			}
			// The leader places new streams only on peers whose stats it
			// has: until then an R3 create fails with "no suitable peers
			// for placement, peer offline".
			if s.JetStreamIsLeader() {
				leader = len(s.JetStreamClusterPeers()) == len(running)
			}
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

// metaFormed reports whether s sees the JetStream meta group with all n
// nodes as known voting members. Until then a leader can be elected by
// fewer nodes, and stopping one of them can leave the rest without a
// quorum for good.
func metaFormed(s *server.Server, n int) bool {
	rz := s.Raftz(&server.RaftzOptions{})
	if rz == nil {
		return false
	}
	meta, ok := (*rz)[server.DEFAULT_SYSTEM_ACCOUNT]["_meta_"]
	if !ok || meta.Size != n || len(meta.Peers) != n-1 {
		return false
	}
	for _, p := range meta.Peers {
		if !p.Known {
			return false
		}
	}
	return true
}
