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

// SuperCluster is JetStream clusters of in-process servers joined by
// gateways. Every gateway connection goes through the Proxy in front of
// the server it reaches, which the server advertises, so that Cut and
// Restore take the clusters apart and join them again.
type SuperCluster struct {
	t        testing.TB
	Clusters []*Cluster
	proxies  []*Proxy
}

// RunSuperCluster starts one cluster per size, named A, B, ..., with
// nodes a1, a2, ..., b1, ..., and waits until JetStream has a meta
// leader that every node follows and every gateway is up.
func RunSuperCluster(t testing.TB, sizes ...int) *SuperCluster {
	t.Helper()
	sc := &SuperCluster{t: t}
	type plan struct {
		name       string
		routes, gw []int
		advertised []string // each node's gateway proxy, host:port
	}
	plans := make([]*plan, len(sizes))
	for i, n := range sizes {
		p := &plan{name: string(rune('A' + i))}
		for range n {
			route, gw := ReservePort(t), ReservePort(t)
			px := NewProxy(t, net.JoinHostPort("127.0.0.1", strconv.Itoa(gw)))
			sc.proxies = append(sc.proxies, px)
			p.routes, p.gw = append(p.routes, route), append(p.gw, gw)
			p.advertised = append(p.advertised, hostPort(px.URL()))
		}
		plans[i] = p
	}
	for i, p := range plans {
		var routes []*url.URL
		for _, r := range p.routes {
			routes = append(routes, &url.URL{Scheme: "nats", Host: net.JoinHostPort("127.0.0.1", strconv.Itoa(r))})
		}
		var remotes []*server.RemoteGatewayOpts
		for _, o := range plans {
			var urls []*url.URL
			for _, a := range o.advertised {
				urls = append(urls, &url.URL{Scheme: "nats", Host: a})
			}
			remotes = append(remotes, &server.RemoteGatewayOpts{Name: o.name, URLs: urls})
		}
		c := &Cluster{t: t}
		for j := range sizes[i] {
			node := newServer(t, WithName(fmt.Sprintf("%s%d", strings.ToLower(p.name), j+1)), func(o *server.Options) {
				o.Cluster = server.ClusterOpts{Name: p.name, Host: "127.0.0.1", Port: p.routes[j]}
				o.Routes = routes
				o.Gateway = server.GatewayOpts{Name: p.name, Host: "127.0.0.1", Port: p.gw[j],
					Advertise: p.advertised[j], Gateways: remotes}
			})
			node.launch()
			c.Nodes = append(c.Nodes, node)
		}
		sc.Clusters = append(sc.Clusters, c)
	}
	for _, c := range sc.Clusters {
		for _, node := range c.Nodes {
			node.waitReady()
		}
	}
	sc.WaitReady()
	return sc
}

// Cluster returns the cluster named name (A, B, ...), or nil.
func (sc *SuperCluster) Cluster(name string) *Cluster {
	for i, c := range sc.Clusters {
		if string(rune('A'+i)) == name {
			return c
		}
	}
	return nil
}

// Cut takes the clusters apart: every gateway connection is reset and
// no new one is let through until Restore.
func (sc *SuperCluster) Cut() {
	for _, p := range sc.proxies {
		p.Cut()
	}
}

// Restore lets the gateways connect again.
func (sc *SuperCluster) Restore() {
	for _, p := range sc.proxies {
		p.Restore()
	}
}

// nodes is every running server of every cluster.
func (sc *SuperCluster) nodes() (all []*server.Server, total int) {
	for _, c := range sc.Clusters {
		for _, n := range c.Nodes {
			total++
			if s := n.Raw(); s != nil {
				all = append(all, s)
			}
		}
	}
	return all, total
}

// WaitReady waits until every gateway is up and JetStream has a meta
// leader that every running node follows.
func (sc *SuperCluster) WaitReady() {
	sc.t.Helper()
	Eventually(sc.t, 60*time.Second, sc.ready, func() string { return "the supercluster is not ready" })
}

func (sc *SuperCluster) ready() bool {
	running, total := sc.nodes()
	leader := false
	for _, s := range running {
		if s.NumOutboundGateways() != len(sc.Clusters)-1 || !s.JetStreamIsCurrent() || !metaFormed(s, total) {
			return false
		}
		if s.JetStreamIsLeader() {
			leader = len(s.JetStreamClusterPeers()) == len(running)
		}
	}
	return leader
}

// WaitApart waits until no gateway is up.
func (sc *SuperCluster) WaitApart() {
	sc.t.Helper()
	Eventually(sc.t, 30*time.Second, func() bool {
		running, _ := sc.nodes()
		for _, s := range running {
			if s.NumOutboundGateways() != 0 {
				return false
			}
		}
		return true
	}, func() string { return "gateways are still up after the cut" })
}
