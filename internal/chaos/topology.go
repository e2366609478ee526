package chaos

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/corral-go/corral/internal/natstest"
)

// Server is one nats-server in a child process, which the nemesis kills,
// pauses and restarts, and which each application reaches through a path
// of its own (a proxy) that the nemesis cuts, blackholes and slows.
type Server struct {
	proc  *natstest.Process
	links map[string]*natstest.Proxy
}

// NewServer starts the server and a path for each application.
func NewServer(t testing.TB) *Server {
	s := &Server{proc: natstest.StartProcess(t), links: map[string]*natstest.Proxy{}}
	for _, name := range append([]string{"pub"}, workerNames...) {
		s.links[name] = natstest.NewProxy(t, s.proc.URL())
	}
	return s
}

// URL is the server's own URL, for the nemesis and the checker.
func (s *Server) URL() string { return s.proc.URL() }

func (s *Server) servers(app string) []string { return []string{s.links[app].URL()} }

func (s *Server) replicas() int { return 1 }

func (s *Server) cut(app string, cut bool) bool {
	if cut {
		s.links[app].Cut()
	} else {
		s.links[app].Restore()
	}
	return true
}

// eachLink applies f to every application's path.
func (s *Server) eachLink(f func(*natstest.Proxy)) {
	for _, l := range s.links {
		f(l)
	}
}

// Faults are the faults of the fault matrix this topology can do, with
// the workload's own.
func (s *Server) Faults(w *Workload, _ *nats.Conn, js jetstream.JetStream) []Fault {
	return []Fault{
		{Name: "server-kill-9", Do: func() error { s.proc.Kill(); hold(time.Second); s.proc.Start(); return nil }},
		// Paused past the handlers' AckWait (5s): what they hold is
		// redelivered, and nothing is lost.
		{Name: "server-pause", Do: func() error { s.proc.Pause(); hold(6 * time.Second); s.proc.Resume(); return nil }},
		{Name: "server-restart", Do: func() error { s.proc.Terminate(); s.proc.Start(); return nil }},
		{Name: "server-lame-duck", Do: func() error { s.proc.LameDuck(); s.proc.Wait(); s.proc.Start(); return nil }},
		{Name: "path-blackhole", Do: func() error {
			s.eachLink((*natstest.Proxy).Pause)
			hold(4 * time.Second) // past ping_interval x (max_pings_outstanding+1)
			s.eachLink((*natstest.Proxy).Restore)
			return nil
		}},
		{Name: "path-cut", Do: func() error {
			s.eachLink((*natstest.Proxy).Cut)
			hold(time.Second)
			s.eachLink((*natstest.Proxy).Restore)
			return nil
		}},
		{Name: "path-latency", Do: func() error {
			s.eachLink(func(p *natstest.Proxy) { p.Delay(50 * time.Millisecond) })
			hold(3 * time.Second)
			s.eachLink(func(p *natstest.Proxy) { p.Delay(0) })
			return nil
		}},
		w.WorkerKillFault("w2", time.Second),
		w.PanicFault(2 * time.Second),
		ConsumerDeleteFault(js),
		w.BadMessageFault(),
	}
}

// Cluster is a three-node JetStream cluster in this process, with the
// workload's stream, bucket and queue replicated on all three; the
// nemesis moves their leaders and takes nodes away.
type Cluster struct {
	c *natstest.Cluster
}

// NewCluster starts the cluster.
func NewCluster(t testing.TB) *Cluster { return &Cluster{c: natstest.RunCluster(t, 3)} }

// URL is every node's URL, for the nemesis and the checker.
func (c *Cluster) URL() string { return c.c.URLs() }

func (c *Cluster) servers(string) []string { return strings.Split(c.c.URLs(), ",") }

func (c *Cluster) replicas() int { return 3 }

func (c *Cluster) cut(string, bool) bool { return false }

// replicated are the streams the workload keeps on the cluster.
var replicated = []string{ordersStream, "KV_" + resultsBucket, "TASKS_" + taskQueue}

// Faults are the cluster's faults, with the workload's own.
func (c *Cluster) Faults(w *Workload, nc *nats.Conn, js jetstream.JetStream) []Fault {
	return []Fault{
		{Name: "stream-stepdown", Do: func() error {
			for _, s := range replicated {
				if err := stepDown(nc, "$JS.API.STREAM.LEADER.STEPDOWN."+s); err != nil {
					return err
				}
			}
			return nil
		}},
		{Name: "consumer-stepdown", Do: func() error {
			return stepDown(nc, "$JS.API.CONSUMER.LEADER.STEPDOWN."+ordersStream+"."+ordersHandler)
		}},
		{Name: "node-loss", Do: func() error {
			i, err := c.leader(js)
			if err != nil {
				return err
			}
			c.c.Stop(i)
			hold(3 * time.Second)
			c.c.Restart(i)
			return nil
		}},
		w.WorkerKillFault("w2", time.Second),
		w.PanicFault(2 * time.Second),
	}
}

// leader returns the index of the node leading the orders stream.
func (c *Cluster) leader(js jetstream.JetStream) (int, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	s, err := js.Stream(ctx, ordersStream)
	if err != nil {
		return 0, err
	}
	info, err := s.Info(ctx)
	if err != nil {
		return 0, err
	}
	if info.Cluster == nil {
		return 0, errors.New("the orders stream has no cluster information")
	}
	for i, n := range c.c.Nodes {
		if n == c.c.Node(info.Cluster.Leader) {
			return i, nil
		}
	}
	return 0, fmt.Errorf("no node is the leader %q", info.Cluster.Leader)
}

// stepDown asks the leader behind api to step down; the server answers
// success or an error.
func stepDown(nc *nats.Conn, api string) error {
	resp, err := nc.Request(api, nil, 5*time.Second)
	if err != nil {
		return fmt.Errorf("%s: %w", api, err)
	}
	var r struct {
		Success bool `json:"success"`
		Error   *struct {
			Description string `json:"description"`
		} `json:"error"`
	}
	if err := json.Unmarshal(resp.Data, &r); err != nil {
		return fmt.Errorf("%s: %w", api, err)
	}
	if !r.Success {
		if r.Error != nil {
			return fmt.Errorf("%s: %s", api, r.Error.Description)
		}
		return fmt.Errorf("%s: not done", api)
	}
	return nil
}
