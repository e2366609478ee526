package corral

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/corral-go/corral/connection"
	"github.com/corral-go/corral/consumer"
	"github.com/corral-go/corral/publisher"
	"github.com/corral-go/corral/supervisor"
	"github.com/corral-go/corral/tasks"
)

// Status is a snapshot of a Client.
type Status struct {
	Name string
	// Running is true while Run (or Serve) runs.
	Running bool
	// NotReady names what Ready still waits for, as its error does:
	// "connection (reconnecting)", `handler "orders"`, "ops listener
	// (127.0.0.1:9090)"; "Run" when the Client is not running. Empty when
	// everything declared is ready.
	NotReady []string
	// Children is every child of the tree, in start order.
	Children []supervisor.ChildStatus
	// Connection is the connection's state.
	Connection connection.Status
	// Publisher is the buffered publisher's state.
	Publisher publisher.Status
	// Handlers is every declared handler, with its counters.
	Handlers []consumer.Status
	// Tasks is this process's worker of every task queue it serves.
	Tasks []TaskStatus
	// Watches is every declared watch.
	Watches []supervisor.ChildStatus
	// Unstopped names children that did not stop in time at the last
	// shutdown.
	Unstopped []string
}

// Status returns a snapshot of the tree and the connection.
func (c *Client) Status() Status {
	children, handlers := c.tree.Status(), c.consumers.Status()
	if len(handlers) > 0 && !slices.ContainsFunc(children, func(ch supervisor.ChildStatus) bool { return ch.Name == "consumers" }) {
		// Declared only while running: served beside the tree (see
		// serveTree), drawn as if in it.
		group := supervisor.ChildStatus{Name: "consumers", State: supervisor.Stopped}
		if slices.ContainsFunc(handlers, func(h consumer.Status) bool { return h.Child.State == supervisor.Running }) {
			group.State = supervisor.Running
		}
		children = append(children, group)
	}
	snap := c.ready.snapshot()
	conn, pub := c.conn.Status(), c.pub.Status()
	notReady, _ := c.pending(snap, conn.State, pub.Ready, true)
	return Status{
		Name:       c.cfg.Name,
		Running:    snap.running,
		NotReady:   notReady,
		Children:   children,
		Connection: conn,
		Publisher:  pub,
		Handlers:   handlers,
		Tasks:      c.taskStatus(),
		Watches:    c.watchers.Status(),
		Unstopped:  slices.Concat(c.tree.Unstopped(), c.consumers.Unstopped(), c.tasks.Unstopped(), c.watchers.Unstopped()),
	}
}

// String draws the tree, one child a line.
func (s Status) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s\n", s.Name)
	for i, ch := range s.Children {
		fmt.Fprintf(&b, "%s %-12s %-11s restarts=%d", twig(i, len(s.Children)), ch.Name, ch.State, ch.Restarts)
		if !ch.Since.IsZero() { // zero: never started, as after a Run refused at once
			fmt.Fprintf(&b, " since=%s", ch.Since.Format(time.TimeOnly))
		}
		switch ch.Name {
		case "connection":
			fmt.Fprintf(&b, " conn=%s", s.Connection.State)
			if s.Connection.URL != "" {
				fmt.Fprintf(&b, " url=%s", s.Connection.URL)
			}
			if len(s.Connection.Discovered) > 0 {
				fmt.Fprintf(&b, " discovered=%s", strings.Join(s.Connection.Discovered, ","))
			}
		case "publisher":
			p := s.Publisher
			fmt.Fprintf(&b, " buffered=%d in_flight=%d published=%d acked=%d retried=%d failed=%d refused=%d",
				p.Buffered, p.InFlight, p.Published, p.Acked, p.Retried, p.Failed, p.Refused)
		}
		if ch.LastError != "" {
			fmt.Fprintf(&b, " last_error=%q", ch.LastError)
		}
		b.WriteByte('\n')
		indent := "│   "
		if i == len(s.Children)-1 {
			indent = "    "
		}
		switch ch.Name {
		case "consumers":
			s.drawHandlers(&b, indent)
		case "tasks":
			s.drawTasks(&b, indent)
		case "watchers":
			for j, w := range s.Watches {
				fmt.Fprintf(&b, "%s%s %-12s %-11s restarts=%d", indent, twig(j, len(s.Watches)), w.Name, w.State, w.Restarts)
				if w.LastError != "" {
					fmt.Fprintf(&b, " last_error=%q", w.LastError)
				}
				b.WriteByte('\n')
			}
		}
	}
	return b.String()
}

func (s Status) drawHandlers(b *strings.Builder, indent string) {
	for j, h := range s.Handlers {
		cn := h.Counters
		fmt.Fprintf(b, "%s%s %-12s %-11s restarts=%d", indent, twig(j, len(s.Handlers)), h.Name, h.Child.State, h.Child.Restarts)
		if h.Stream != "" {
			fmt.Fprintf(b, " stream=%s consumer=%s workers=%d held=%d/%d received=%d acked=%d naked=%d dead_lettered=%d",
				h.Stream, h.Consumer, h.Workers, cn.InFlight+int64(cn.QueueDepth), h.Workers+h.QueueSize,
				cn.Received, cn.Acked, cn.Naked, cn.DeadLettered)
			if h.MaxAckPending != 0 {
				fmt.Fprintf(b, " ack_pending=%d/%d", h.AckPending, h.MaxAckPending)
			}
		} else {
			fmt.Fprintf(b, " subject=%s workers=%d queue=%d/%d received=%d processed=%d failed=%d client_errors=%d dropped=%d",
				h.Subject, h.Workers, cn.QueueDepth, h.QueueSize, cn.Received, cn.Processed, cn.Failed, cn.ClientErrors, cn.Dropped)
		}
		if h.SlowConsumer {
			b.WriteString(" slow_consumer")
		}
		if h.NearMaxAckPending {
			b.WriteString(" near_max_ack_pending")
		}
		b.WriteByte('\n')
	}
}

// twig is the branch drawn before item j of n.
func twig(j, n int) string {
	if j == n-1 {
		return "└──"
	}
	return "├──"
}

// TaskStatus is a snapshot of a task queue's worker, with its state in the
// tree.
type TaskStatus struct {
	tasks.Status
	Child supervisor.ChildStatus
}

func (c *Client) taskStatus() []TaskStatus {
	children := map[string]supervisor.ChildStatus{}
	for _, ch := range c.tasks.Status() {
		children[ch.Name] = ch
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make([]TaskStatus, 0, len(c.workers))
	for _, queue := range slices.Sorted(maps.Keys(c.workers)) {
		w := c.workers[queue]
		out = append(out, TaskStatus{Status: w.Status(), Child: children[w.String()]})
	}
	return out
}

func (s Status) drawTasks(b *strings.Builder, indent string) {
	for j, t := range s.Tasks {
		cn := t.Counters
		fmt.Fprintf(b, "%s%s %-12s %-11s restarts=%d worker=%s process=%s lease=%s held=%d/%d started=%d completed=%d failed=%d recovered=%d",
			indent, twig(j, len(s.Tasks)), t.Queue, t.Child.State, t.Child.Restarts, t.Worker, t.Process, t.Lease, t.Held, t.Capacity,
			cn.Started, cn.Completed, cn.Failed, cn.Recovered)
		if t.Recoverer {
			b.WriteString(" recoverer")
		}
		b.WriteByte('\n')
	}
}
