package ops

import (
	"context"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/corral-go/corral"
	"github.com/corral-go/corral/tasks"
)

// taskBounds are the buckets of corral_tasks_run_duration_seconds: the
// handlers' and up to a day, as tasks run for hours.
var taskBounds = append(append([]time.Duration(nil), latencyBounds...),
	5*time.Minute, 15*time.Minute, time.Hour, 6*time.Hour, 24*time.Hour)

// Queue-level series are read from the queue's streams, at most once per
// backlogEvery, and a read waits at most backlogWait: a scrape never
// waits long on a slow server, and many scrapes cost the server little.
const (
	backlogEvery = 5 * time.Second
	backlogWait  = 2 * time.Second
)

// backlogs caches each queue's Backlog.
type backlogs struct {
	mu   sync.Mutex
	read map[string]backlogRead
}

type backlogRead struct {
	at time.Time
	b  tasks.Backlog
	ok bool
}

// get returns queue's Backlog, read again when older than backlogEvery;
// ok is false when it could not be read.
func (bs *backlogs) get(c *corral.Client, queue string) (tasks.Backlog, bool) {
	bs.mu.Lock()
	defer bs.mu.Unlock()
	if r, ok := bs.read[queue]; ok && time.Since(r.at) < backlogEvery {
		return r.b, r.ok
	}
	r := backlogRead{at: time.Now()}
	if w, ok := c.Worker(queue); ok {
		ctx, cancel := context.WithTimeout(context.Background(), backlogWait)
		b, err := tasks.NewQueue(queue, w.Config(), c.ConnectionSupervisor()).Backlog(ctx)
		cancel()
		r.b, r.ok = b, err == nil
	}
	if bs.read == nil {
		bs.read = map[string]backlogRead{}
	}
	bs.read[queue] = r
	return r.b, r.ok
}

// collectTasks sends the task workers' series, and, from the process
// whose worker is a queue's recoverer (one per queue), the queue's own.
func (k *collector) collectTasks(ch chan<- prometheus.Metric, st corral.Status,
	counter func(string, uint64, ...string), gauge func(string, float64, ...string)) {
	for _, t := range st.Tasks {
		q, cn := t.Queue, t.Counters
		gauge("corral_tasks_lease_held", bool01(t.Lease == tasks.LeaseStateHeld), q)
		gauge("corral_tasks_held", float64(t.Held), q)
		gauge("corral_tasks_capacity", float64(t.Capacity), q)
		counter("corral_tasks_started_total", cn.Started, q)
		counter("corral_tasks_completed_total", cn.Completed, q)
		counter("corral_tasks_failed_total", cn.Failed, q)
		counter("corral_tasks_handed_back_total", cn.HandedBack, q)
		counter("corral_tasks_duplicates_total", cn.Duplicates, q)
		counter("corral_tasks_passed_over_total", cn.PassedOver, q)
		counter("corral_tasks_rejected_total", cn.Rejected, q)
		counter("corral_tasks_unconfirmed_total", cn.Unconfirmed, q)
		counter("corral_tasks_cancelled_total", cn.Cancelled, q)
		counter("corral_tasks_recovered_total", cn.Recovered, q)
		counter("corral_tasks_leases_lost_total", cn.LeasesLost, q)
		if w, ok := k.c.Worker(q); ok {
			ch <- constHistogram(k.d["corral_tasks_run_duration_seconds"], w.Durations(taskBounds), taskBounds, q)
		}
		if !t.Recoverer {
			continue
		}
		b, ok := k.backlogs.get(k.c, q)
		if !ok {
			continue
		}
		for slot, n := range b.Waiting {
			gauge("corral_tasks_queue_waiting", float64(n), q, slot)
		}
		gauge("corral_tasks_queue_taken", float64(b.Taken), q)
		oldest := 0.0
		if !b.Oldest.IsZero() {
			oldest = max(time.Since(b.Oldest).Seconds(), 0)
		}
		gauge("corral_tasks_queue_oldest_waiting_seconds", oldest, q)
		gauge("corral_tasks_queue_dead_letters", float64(b.DeadLettered), q)
		gauge("corral_tasks_queue_paused", bool01(!b.PausedUntil.IsZero()), q)
	}
}
