package main

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"os"
	"strconv"
	"time"

	"github.com/nats-io/nats-server/v2/server"

	"github.com/corral-go/corral/examples/internal/procs"
)

// leafNode is a hub and a leaf node with JetStream domains of their own,
// the leaf linked to the hub through a link the example cuts.
type leafNode struct {
	hub, leaf *server.Server
	link      *procs.Link
	leafURL   string
	dir       string
}

// startLeafNode starts the hub, the link and the leaf node, and waits
// until the leaf node is linked.
func startLeafNode(ctx context.Context) (*leafNode, error) {
	dir, err := os.MkdirTemp("", "corral-leafnode")
	if err != nil {
		return nil, err
	}
	l := &leafNode{dir: dir}
	// The hub advertises no leaf URL: the leaf node would reconnect to
	// it directly, around the link.
	l.hub, err = start(&server.Options{ServerName: "hub", JetStreamDomain: "hub", StoreDir: dir + "/hub",
		LeafNode: server.LeafNodeOpts{Host: "127.0.0.1", Port: server.RANDOM_PORT, NoAdvertise: true}})
	if err != nil {
		l.stop()
		return nil, err
	}
	varz, err := l.hub.Varz(nil)
	if err != nil || varz.LeafNode.Port <= 0 {
		l.stop()
		return nil, errors.New("the hub has no leaf node port")
	}
	if l.link, err = procs.NewLink("127.0.0.1:" + strconv.Itoa(varz.LeafNode.Port)); err != nil {
		l.stop()
		return nil, err
	}
	remote, err := url.Parse(l.link.URL())
	if err != nil {
		l.stop()
		return nil, err
	}
	l.leaf, err = start(&server.Options{ServerName: "edge", JetStreamDomain: "edge", StoreDir: dir + "/edge",
		LeafNode: server.LeafNodeOpts{Remotes: []*server.RemoteLeafOpts{{URLs: []*url.URL{remote}}},
			ReconnectInterval: 100 * time.Millisecond}})
	if err != nil {
		l.stop()
		return nil, err
	}
	l.leafURL = l.leaf.ClientURL()
	linked := func() bool { return l.hub.NumLeafNodes() > 0 && l.leaf.NumLeafNodes() > 0 }
	if err := procs.Until(ctx, 10*time.Millisecond, linked); err != nil {
		l.stop()
		return nil, fmt.Errorf("the leaf node did not link to its hub: %w", err)
	}
	return l, nil
}

// start starts a server with JetStream on a random loopback port.
func start(o *server.Options) (*server.Server, error) {
	o.Host, o.Port, o.JetStream, o.NoLog, o.NoSigs = "127.0.0.1", server.RANDOM_PORT, true, true, true
	s, err := server.NewServer(o)
	if err != nil {
		return nil, err
	}
	s.Start()
	if !s.ReadyForConnections(10 * time.Second) {
		s.Shutdown()
		return nil, fmt.Errorf("server %s did not start", o.ServerName)
	}
	return s, nil
}

func (l *leafNode) stop() {
	for _, s := range []*server.Server{l.leaf, l.hub} {
		if s != nil {
			s.Shutdown()
			s.WaitForShutdown()
		}
	}
	if l.link != nil {
		l.link.Close()
	}
	_ = os.RemoveAll(l.dir)
}
