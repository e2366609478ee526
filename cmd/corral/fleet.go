package main

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/corral-go/corral/connection"
	"github.com/corral-go/corral/fleet"
	"github.com/corral-go/corral/inspector"
)

// procStatus is what corral reads of a Client's Status in a status answer:
// a few fields of corral.Status, by name.
type procStatus struct {
	Running  bool
	NotReady []string
	Children []struct {
		Name, State, LastError string
		Restarts               int
	}
	Handlers []struct {
		Name, Subject, Stream, Consumer string
		Ready                           bool
	}
	Tasks []struct {
		Queue, Worker, Process, Lease string
		Held, Capacity                int
	}
}

// process is a row of ps.
type process struct {
	Service  string    `json:"service"`
	Instance string    `json:"instance"`
	Host     string    `json:"host"`
	PID      int       `json:"pid"`
	Version  string    `json:"version,omitempty"`
	Started  time.Time `json:"started"`
	Uptime   string    `json:"uptime"`
	State    string    `json:"state"`
	Handlers int       `json:"handlers"`
	Tasks    []queueAt `json:"tasks,omitempty"`
}

// queueAt is a process's worker of one queue.
type queueAt struct {
	Queue    string `json:"queue"`
	Held     int    `json:"held"`
	Capacity int    `json:"capacity"`
}

// gather asks the fleet for the status of name (every service when
// empty) and id, waiting wait for the answers.
func (c *cli) gather(ctx context.Context, name, id string, wait time.Duration) ([]fleet.Instance, error) {
	nc, err := c.connect()
	if err != nil {
		return nil, err
	}
	defer nc.Close()
	return inspector.New(connection.NewFixed(nc), nil).Status(ctx, fleet.Query{Name: name, ID: id, Wait: wait})
}

func runPS(ctx context.Context, c *cli, args []string) error {
	fs := c.flags("ps")
	name := fs.String("name", "", "only the instances of this service")
	wait := fs.Duration("wait", fleet.DefaultWait, "how long answers are gathered")
	if _, err := parse(fs, args, 0, 0); err != nil {
		return err
	}
	found, err := c.gather(ctx, *name, "", *wait)
	if err != nil {
		return err
	}
	rows := make([]process, 0, len(found))
	for _, in := range found {
		p := process{Service: in.Name, Instance: in.ID, Host: in.Host, PID: in.PID, Version: in.Version, Started: in.Started,
			Uptime: in.Uptime, State: "unknown"}
		var st procStatus
		if json.Unmarshal(in.Status, &st) == nil {
			p.State, p.Handlers = state(st), len(st.Handlers)
			for _, t := range st.Tasks {
				p.Tasks = append(p.Tasks, queueAt{Queue: t.Queue, Held: t.Held, Capacity: t.Capacity})
			}
		}
		rows = append(rows, p)
	}
	if c.json {
		return c.printJSON(rows)
	}
	t := newTable(c.out, "SERVICE", "INSTANCE", "HOST", "PID", "UPTIME", "STATE", "HANDLERS", "TASKS (HELD/CAPACITY)")
	for _, p := range rows {
		var tasks []string
		for _, q := range p.Tasks {
			tasks = append(tasks, fmt.Sprintf("%s %d/%d", q.Queue, q.Held, q.Capacity))
		}
		t.row(p.Service, p.Instance, p.Host, p.PID, p.Uptime, p.State, p.Handlers, strings.Join(tasks, ", "))
	}
	t.footer(fmt.Sprintf("%d process(es) answered within %v", len(rows), *wait))
	return t.flush()
}

// state says whether a process is ready, and what it waits for if not.
func state(st procStatus) string {
	switch {
	case !st.Running:
		return "stopped"
	case len(st.NotReady) > 0:
		return "not ready: " + strings.Join(st.NotReady, ", ")
	}
	return "ready"
}

func runStatus(ctx context.Context, c *cli, args []string) error {
	fs := c.flags("status")
	wait := fs.Duration("wait", fleet.DefaultWait, "how long answers are gathered")
	rest, err := parse(fs, args, 0, 2)
	if err != nil {
		return err
	}
	rest = append(rest, "", "")
	found, err := c.gather(ctx, rest[0], rest[1], *wait)
	if err != nil {
		return err
	}
	if len(found) == 0 {
		return fmt.Errorf("no process answered within %v", *wait)
	}
	if c.json {
		return c.printJSON(found)
	}
	for i, in := range found {
		if i > 0 {
			fmt.Fprintln(c.out)
		}
		var st procStatus
		_ = json.Unmarshal(in.Status, &st)
		fmt.Fprintf(c.out, "%s %s on %s pid %d, up %s: %s\n", in.Name, in.ID, in.Host, in.PID, in.Uptime, state(st))
		t := newTable(c.out, "  CHILD", "STATE", "RESTARTS", "LAST ERROR")
		for _, ch := range st.Children {
			t.row("  "+ch.Name, ch.State, ch.Restarts, ch.LastError)
		}
		for _, h := range st.Handlers {
			t.row("  handler "+h.Name, readiness(h.Ready), "", h.Subject+h.Stream)
		}
		for _, q := range st.Tasks {
			t.row("  tasks "+q.Queue, "lease "+q.Lease, "", fmt.Sprintf("held %d/%d, worker %s", q.Held, q.Capacity, q.Worker))
		}
		if err := t.flush(); err != nil {
			return err
		}
	}
	return nil
}

func readiness(ready bool) string {
	if ready {
		return "ready"
	}
	return "not ready"
}
