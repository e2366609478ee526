package ops

import (
	"context"
	"encoding/json"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/corral-go/corral"
	"github.com/corral-go/corral/fleet"
	"github.com/corral-go/corral/supervisor"
	"github.com/corral-go/corral/tasks"
)

// The fleet section gathers the instances of the page's service over NATS
// for at most fleetWait (less once as many answered as last time), and
// keeps an instance that stopped answering, marked, for goneFor.
const (
	fleetWait = 500 * time.Millisecond
	goneFor   = time.Minute
)

// fleetView is the fleet section's memory: the instances seen lately.
type fleetView struct {
	c *corral.Client

	mu   sync.Mutex
	seen map[string]fleetRow // by instance ID, as last seen
}

// fleetRow is an instance of the service, as it answered last.
type fleetRow struct {
	fleet.Identity
	This     bool // the instance that serves the page
	Gone     bool // it did not answer this time
	LastSeen time.Time
	State    string
	Handlers int
	Tasks    string // each queue's held/capacity
}

// fleetQueue is a task queue of the fleet: its backlog, read from its
// streams, and its workers, from the instances' answers.
type fleetQueue struct {
	Name             string
	Backlog          tasks.Backlog
	Waiting          uint64
	Held, Capacity   int
	Workers          int
	Err              string // why the backlog could not be read
	OldestWaitingAge time.Duration
}

// fleetData is what the fleet section shows.
type fleetData struct {
	On        bool // discovery is on: the instances answer
	Instances []fleetRow
	Queues    []fleetQueue
	Err       string
	Wait      time.Duration
}

// gather asks the service's instances for their status, and reads each
// task queue they serve. own is the page's Client's status: without a
// discovery child, no instance answers.
func (f *fleetView) gather(ctx context.Context, own corral.Status) fleetData {
	d := fleetData{Wait: fleetWait,
		On: slices.ContainsFunc(own.Children, func(ch supervisor.ChildStatus) bool { return ch.Name == "discovery" })}
	if !d.On {
		return d
	}
	in := f.c.Inspector()
	self := f.c.Identity()
	f.mu.Lock()
	expect := len(f.seen)
	f.mu.Unlock()
	found, err := in.Status(ctx, fleet.Query{Name: self.Name, Wait: fleetWait, Expect: expect})
	if err != nil {
		d.Err = err.Error()
	}
	now := time.Now()
	queues := map[string]*fleetQueue{}
	answered := map[string]bool{}
	f.mu.Lock()
	if f.seen == nil {
		f.seen = map[string]fleetRow{}
	}
	for _, inst := range found {
		row := fleetRow{Identity: inst.Identity, This: inst.ID == self.ID, LastSeen: now, State: "unknown"}
		var st corral.Status
		if json.Unmarshal(inst.Status, &st) == nil {
			row.State, row.Handlers = instanceState(st), len(st.Handlers)
			var held []string
			for _, t := range st.Tasks {
				held = append(held, t.Queue+" "+strconv.Itoa(t.Held)+"/"+strconv.Itoa(t.Capacity))
				q := queues[t.Queue]
				if q == nil {
					q = &fleetQueue{Name: t.Queue}
					queues[t.Queue] = q
				}
				q.Held, q.Capacity, q.Workers = q.Held+t.Held, q.Capacity+t.Capacity, q.Workers+1
			}
			row.Tasks = strings.Join(held, ", ")
		}
		f.seen[inst.ID] = row
		answered[inst.ID] = true
	}
	for id, row := range f.seen {
		switch {
		case answered[id]:
		case now.Sub(row.LastSeen) > goneFor:
			delete(f.seen, id)
			continue
		default:
			row.Gone = true
		}
		d.Instances = append(d.Instances, row)
	}
	f.mu.Unlock()
	slices.SortFunc(d.Instances, func(a, b fleetRow) int { return strings.Compare(a.Host+a.ID, b.Host+b.ID) })
	for _, name := range sortedKeys(queues) {
		q := queues[name]
		if iq, err := in.Queue(ctx, name); err != nil {
			q.Err = err.Error()
		} else if q.Backlog, err = iq.Backlog(ctx); err != nil {
			q.Err = err.Error()
		}
		q.Waiting = q.Backlog.WaitingTotal()
		if !q.Backlog.Oldest.IsZero() {
			q.OldestWaitingAge = now.Sub(q.Backlog.Oldest)
		}
		d.Queues = append(d.Queues, *q)
	}
	return d
}

// instanceState says whether an instance is ready, and what it waits for
// if not.
func instanceState(st corral.Status) string {
	switch {
	case !st.Running:
		return "stopped"
	case len(st.NotReady) > 0:
		return "not ready: " + strings.Join(st.NotReady, ", ")
	}
	return "ready"
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
