package chaos

import (
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/corral-go/corral/connection"
	"github.com/corral-go/corral/internal/natstest"
)

// Leaf is a hub with JetStream (domain hub) and a leaf node with its own
// (domain leaf), in this process. The applications connect to the leaf
// node, each through a path of its own, and keep the workload's stream,
// bucket and queue in the hub: every JetStream request crosses the leaf
// link, which the nemesis cuts and blackholes.
type Leaf struct {
	paths
	l *natstest.LeafNode
}

// NewLeaf starts the hub, the leaf node and the paths.
func NewLeaf(t testing.TB) *Leaf {
	l := natstest.RunLeafNode(t)
	return &Leaf{l: l, paths: newPaths(t, l.Leaf.URL())}
}

// URL is the hub's URL, for the nemesis and the checker: what it holds
// is what the applications stored.
func (l *Leaf) URL() string { return l.l.Hub.URL() }

func (l *Leaf) replicas() int { return 1 }

func (l *Leaf) api() connection.JetStreamAPI { return connection.JetStreamAPI{Domain: "hub"} }

// Faults are the leaf topology's faults, with the workload's own. A cut
// or blackholed leaf link leaves the applications connected to the leaf
// node (Keeps) while every JetStream request of theirs fails; it lasts
// past the handlers' AckWait (5s) and the workers' LeaseTTL (2s).
func (l *Leaf) Faults(w *Workload, _ *nats.Conn, js jetstream.JetStream) []Fault {
	return []Fault{
		{Name: "leaf-link-cut", Effect: Keeps, Do: func() error {
			l.l.Link.Cut()
			hold(6 * time.Second)
			l.l.Link.Restore()
			return nil
		}},
		{Name: "leaf-link-blackhole", Effect: Keeps, Do: func() error {
			l.l.Link.Pause()
			hold(6 * time.Second)
			l.l.Link.Restore()
			return nil
		}},
		{Name: "leaf-link-flap", Effect: Keeps, Do: func() error {
			for range 3 {
				l.l.Link.Cut()
				hold(300 * time.Millisecond)
				l.l.Link.Restore()
				hold(700 * time.Millisecond)
			}
			return nil
		}},
		{Name: "leaf-restart", Effect: Breaks, Do: func() error { l.l.Leaf.Restart(); return nil }},
		{Name: "hub-restart", Effect: Keeps, Do: func() error { l.l.Hub.Restart(); return nil }},
		w.WorkerKillFault("w2", time.Second),
		w.WorkerPauseFault("w2", 4*time.Second),
		w.PanicFault(2 * time.Second),
		ConsumerDeleteFault(js),
		w.TaskInputsFault(),
	}
}
