package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// natsCluster is a three-node JetStream cluster of in-process servers on
// loopback, for the scenarios on R3 streams: the distributed engine's
// cost (replication, a leader elsewhere) for raw and Corral alike.
type natsCluster struct {
	nodes []*server.Server
}

const clusterNodes = 3

func startCluster(ctx context.Context, dir string) (*natsCluster, error) {
	routePorts := make([]int, clusterNodes)
	var routes []*url.URL
	for i := range routePorts {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, err
		}
		routePorts[i] = ln.Addr().(*net.TCPAddr).Port
		_ = ln.Close()
		routes = append(routes, &url.URL{Scheme: "nats", Host: net.JoinHostPort("127.0.0.1", strconv.Itoa(routePorts[i]))})
	}
	c := &natsCluster{}
	for i := range clusterNodes {
		store := filepath.Join(dir, fmt.Sprintf("n%d", i+1))
		if err := os.MkdirAll(store, 0o755); err != nil {
			c.Shutdown()
			return nil, err
		}
		srv, err := server.NewServer(&server.Options{
			ServerName: fmt.Sprintf("bench-n%d", i+1), Host: "127.0.0.1", Port: server.RANDOM_PORT,
			JetStream: true, StoreDir: store, NoLog: true, NoSigs: true,
			Cluster: server.ClusterOpts{Name: "corral-bench", Host: "127.0.0.1", Port: routePorts[i]},
			Routes:  routes,
		})
		if err != nil {
			c.Shutdown()
			return nil, fmt.Errorf("cluster node %d: %w", i+1, err)
		}
		srv.Start()
		c.nodes = append(c.nodes, srv)
	}
	for i, srv := range c.nodes {
		if !srv.ReadyForConnections(30 * time.Second) {
			c.Shutdown()
			return nil, fmt.Errorf("cluster node %d not ready", i+1)
		}
	}
	if err := c.waitJetStream(ctx); err != nil {
		c.Shutdown()
		return nil, err
	}
	return c, nil
}

// waitJetStream waits until the cluster answers JetStream requests: a
// meta leader is elected and every node is a current member.
func (c *natsCluster) waitJetStream(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	nc, err := nats.Connect(strings.Join(c.URLs(), ","))
	if err != nil {
		return err
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		return err
	}
	for {
		tctx, tcancel := context.WithTimeout(ctx, time.Second)
		_, err := js.AccountInfo(tctx)
		tcancel()
		if err == nil {
			return nil
		} else if ctx.Err() != nil {
			return errors.Join(errors.New("the cluster's JetStream did not come up"), err)
		}
		select {
		case <-ctx.Done():
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// URLs are the client URLs of every node.
func (c *natsCluster) URLs() []string {
	urls := make([]string, len(c.nodes))
	for i, srv := range c.nodes {
		urls[i] = srv.ClientURL()
	}
	return urls
}

// Shutdown stops every node and waits until each has stopped.
func (c *natsCluster) Shutdown() {
	for _, srv := range c.nodes {
		srv.Shutdown()
	}
	for _, srv := range c.nodes {
		srv.WaitForShutdown()
	}
}

// urls are the servers a round connects to: the cluster's while a
// cluster scenario runs, else the single server.
func (e *env) urls() []string {
	if e.cluster != nil {
		return e.cluster.URLs()
	}
	return []string{e.srv.URL()}
}

// onCluster runs f on the three-node cluster with R3 streams; the cluster
// starts with the first round that needs it and stays for the run.
func onCluster(f runFunc) runFunc {
	return func(ctx context.Context, e *env, n int) (sample, error) {
		if e.sharedCluster == nil {
			c, err := startCluster(ctx, filepath.Join(e.storeDir, "cluster"))
			if err != nil {
				return sample{}, err
			}
			e.sharedCluster = c
		}
		e.cluster, e.replicas = e.sharedCluster, clusterNodes
		defer func() { e.cluster, e.replicas = nil, 0 }()
		return f(ctx, e, n)
	}
}
