package chaos

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/corral-go/corral/connection"
	"github.com/corral-go/corral/internal/natstest"
)

// Server is one nats-server in a child process, which the nemesis kills,
// pauses and restarts, and which each application reaches through a path
// of its own (a proxy) that the nemesis cuts, blackholes and slows.
type Server struct {
	paths
	proc *natstest.Process
}

// NewServer starts the server and a path for each application.
func NewServer(t testing.TB) *Server {
	proc := natstest.StartProcess(t)
	return &Server{proc: proc, paths: newPaths(t, proc.URL())}
}

// URL is the server's own URL, for the nemesis and the checker.
func (s *Server) URL() string { return s.proc.URL() }

func (s *Server) replicas() int { return 1 }

func (s *Server) api() connection.JetStreamAPI { return connection.JetStreamAPI{} }

// paths are the applications' paths to one server, each a proxy of its
// own, that a topology cuts, blackholes and slows.
type paths map[string]*natstest.Proxy

// newPaths makes a path to url for the publisher and each worker.
func newPaths(t testing.TB, url string) paths {
	ps := paths{}
	for _, name := range append([]string{"pub"}, workerNames...) {
		ps[name] = natstest.NewProxy(t, url)
	}
	return ps
}

func (ps paths) servers(app string) []string { return []string{ps[app].URL()} }

func (ps paths) cut(app string, cut bool) { ps.set(app, cut, (*natstest.Proxy).Cut) }

func (ps paths) pause(app string, pause bool) { ps.set(app, pause, (*natstest.Proxy).Pause) }

// set does f to app's path, or restores it.
func (ps paths) set(app string, on bool, f func(*natstest.Proxy)) {
	if on {
		f(ps[app])
	} else {
		ps[app].Restore()
	}
}

// each applies f to every application's path.
func (ps paths) each(f func(*natstest.Proxy)) {
	for _, p := range ps {
		f(p)
	}
}

// Faults are the faults of the fault matrix this topology can do, with
// the workload's own.
func (s *Server) Faults(w *Workload, _ *nats.Conn, js jetstream.JetStream) []Fault {
	return []Fault{
		{Name: "server-kill-9", Effect: Breaks, Do: func() error { s.proc.Kill(); hold(time.Second); s.proc.Start(); return nil }},
		// Paused past the handlers' AckWait (5s): what they hold is
		// redelivered, and nothing is lost.
		{Name: "server-pause", Effect: Breaks, Do: func() error { s.proc.Pause(); hold(6 * time.Second); s.proc.Resume(); return nil }},
		{Name: "server-restart", Effect: Breaks, Do: func() error { s.proc.Terminate(); s.proc.Start(); return nil }},
		{Name: "server-lame-duck", Effect: Breaks, Do: func() error { s.proc.LameDuck(); s.proc.Wait(); s.proc.Start(); return nil }},
		{Name: "path-blackhole", Effect: Breaks, Do: func() error {
			s.each((*natstest.Proxy).Pause)
			hold(5 * time.Second) // past ping_interval x (max_pings_outstanding+1)
			s.each((*natstest.Proxy).Restore)
			return nil
		}},
		{Name: "path-cut", Effect: Breaks, Do: func() error {
			s.each((*natstest.Proxy).Cut)
			hold(time.Second)
			s.each((*natstest.Proxy).Restore)
			return nil
		}},
		{Name: "path-latency", Effect: Keeps, Do: func() error {
			s.each(func(p *natstest.Proxy) { p.Delay(50 * time.Millisecond) })
			hold(3 * time.Second)
			s.each(func(p *natstest.Proxy) { p.Delay(0) })
			return nil
		}},
		w.WorkerKillFault("w2", time.Second),
		w.WorkerPauseFault("w2", 4*time.Second),
		w.PanicFault(2 * time.Second),
		ConsumerDeleteFault(js),
		w.BadMessageFault(),
		w.TaskInputsFault(),
	}
}

// Cluster is a three-node JetStream cluster in this process, with the
// workload's stream, bucket and queue replicated on all three; the
// nemesis moves their leaders and takes nodes away. Each application
// reaches each node through a path of its own, so that a worker can be
// cut off before it is killed.
type Cluster struct {
	c     *natstest.Cluster
	links map[string][]*natstest.Proxy
}

// NewCluster starts the cluster and the paths.
func NewCluster(t testing.TB) *Cluster {
	c := &Cluster{c: natstest.RunCluster(t, 3), links: map[string][]*natstest.Proxy{}}
	for _, name := range append([]string{"pub"}, workerNames...) {
		for _, n := range c.c.Nodes {
			c.links[name] = append(c.links[name], natstest.NewProxy(t, n.URL()))
		}
	}
	return c
}

// URL is every node's URL, for the nemesis and the checker.
func (c *Cluster) URL() string { return c.c.URLs() }

func (c *Cluster) servers(app string) []string {
	var urls []string
	for _, l := range c.links[app] {
		urls = append(urls, l.URL())
	}
	return urls
}

func (c *Cluster) replicas() int { return 3 }

func (c *Cluster) api() connection.JetStreamAPI { return connection.JetStreamAPI{} }

func (c *Cluster) cut(app string, cut bool) { c.setPaths(app, cut, (*natstest.Proxy).Cut) }

func (c *Cluster) pause(app string, pause bool) { c.setPaths(app, pause, (*natstest.Proxy).Pause) }

// setPaths does f to each of app's paths, or restores them.
func (c *Cluster) setPaths(app string, on bool, f func(*natstest.Proxy)) {
	for _, l := range c.links[app] {
		if on {
			f(l)
		} else {
			l.Restore()
		}
	}
}

// replicated are the streams the workload keeps on the cluster.
var replicated = []string{ordersStream, "KV_" + resultsBucket, "TASKS_" + taskQueue}

// Faults are the cluster's faults, with the workload's own. A step-down
// must move the leader, or it did not happen.
func (c *Cluster) Faults(w *Workload, nc *nats.Conn, js jetstream.JetStream) []Fault {
	return []Fault{
		{Name: "stream-stepdown", Do: func() error {
			for _, s := range replicated {
				if err := moved(func() (string, error) { return streamLeader(js, s) },
					func() error { return stepDown(nc, "$JS.API.STREAM.LEADER.STEPDOWN."+s) }); err != nil {
					return fmt.Errorf("stream %s: %w", s, err)
				}
			}
			return nil
		}},
		{Name: "consumer-stepdown", Do: func() error {
			return moved(func() (string, error) { return consumerLeader(js) },
				func() error { return stepDown(nc, "$JS.API.CONSUMER.LEADER.STEPDOWN."+ordersStream+"."+ordersHandler) })
		}},
		{Name: "node-loss", Do: func() error {
			leader, err := streamLeader(js, ordersStream)
			if err != nil {
				return err
			}
			for i, n := range c.c.Nodes {
				if n == c.c.Node(leader) {
					c.c.Stop(i)
					hold(3 * time.Second)
					c.c.Restart(i)
					return nil
				}
			}
			return fmt.Errorf("no node is the leader %q", leader)
		}},
		w.WorkerKillFault("w2", time.Second),
		w.WorkerPauseFault("w2", 4*time.Second),
		w.PanicFault(2 * time.Second),
		w.TaskInputsFault(),
	}
}

// moved runs stepDown and waits until leader names another node.
func moved(leader func() (string, error), stepDown func() error) error {
	before, err := leader()
	if err != nil {
		return err
	}
	if err := stepDown(); err != nil {
		return err
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		now, err := leader()
		if err == nil && now != "" && now != before {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("the leader is still %q 10s after stepping down (%v)", before, err)
		}
		time.Sleep(20 * time.Millisecond) // polling the server's view, which no event announces here
	}
}

// streamLeader names the node leading stream s.
func streamLeader(js jetstream.JetStream, s string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	st, err := js.Stream(ctx, s) // fetches the info
	if err != nil {
		return "", err
	}
	return leaderOf(st.CachedInfo().Cluster)
}

// consumerLeader names the node leading the orders consumer.
func consumerLeader(js jetstream.JetStream) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	cons, err := js.Consumer(ctx, ordersStream, ordersHandler) // fetches the info
	if err != nil {
		return "", err
	}
	return leaderOf(cons.CachedInfo().Cluster)
}

func leaderOf(c *jetstream.ClusterInfo) (string, error) {
	if c == nil {
		return "", errors.New("no cluster information")
	}
	return c.Leader, nil
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
