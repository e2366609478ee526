package ops

import (
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/corral-go/corral"
	"github.com/corral-go/corral/connection"
	"github.com/corral-go/corral/supervisor"
	"github.com/corral-go/corral/tasks"
)

// latencyBounds are the buckets of corral_handler_duration_seconds.
var latencyBounds = []time.Duration{
	100 * time.Microsecond, 250 * time.Microsecond, 500 * time.Microsecond,
	time.Millisecond, 2500 * time.Microsecond, 5 * time.Millisecond, 10 * time.Millisecond,
	25 * time.Millisecond, 50 * time.Millisecond, 100 * time.Millisecond, 250 * time.Millisecond,
	500 * time.Millisecond, time.Second, 2500 * time.Millisecond, 5 * time.Second, 10 * time.Second,
	30 * time.Second, time.Minute,
}

// collector reads a Client's Status at each scrape and reports it as
// Prometheus metrics.
type collector struct {
	c        *corral.Client
	d        map[string]*prometheus.Desc
	backlogs backlogs
}

// metricHelp is every metric's help, by name; the labels follow the
// prefix: corral_handler_* by handler, corral_child_* by child,
// corral_tasks_* by queue.
var metricHelp = map[string]string{
	"corral_connection_connected":                 "1 while the connection is connected, else 0.",
	"corral_connection_reconnects_total":          "Reconnections after a lost connection.",
	"corral_child_up":                             "1 while the child of the tree runs, else 0.",
	"corral_child_restarts_total":                 "Times the child was started again after a failure.",
	"corral_handler_ready":                        "1 while the handler is subscribed or consuming on a live connection.",
	"corral_handler_received_total":               "Messages the handler's subscription delivered.",
	"corral_handler_processed_total":              "Handler calls that returned nil.",
	"corral_handler_failed_total":                 "Handler calls that returned an error or panicked.",
	"corral_handler_panicked_total":               "Handler calls that panicked.",
	"corral_handler_dropped_total":                "Messages dropped by the overflow policy, by nats.go, or at shutdown.",
	"corral_handler_rejected_total":               "Requests answered busy by the reject overflow policy.",
	"corral_handler_acked_total":                  "JetStream messages acknowledged.",
	"corral_handler_naked_total":                  "JetStream messages negatively acknowledged.",
	"corral_handler_terminated_total":             "JetStream messages terminated.",
	"corral_handler_dead_lettered_total":          "JetStream messages copied to the dead-letter subject.",
	"corral_handler_queue_depth":                  "Messages waiting for a worker.",
	"corral_handler_queue_capacity":               "Size of the handler's task queue.",
	"corral_handler_in_flight":                    "Handler calls running now.",
	"corral_handler_workers":                      "Workers of the handler.",
	"corral_handler_slow_consumer":                "1 during a slow-consumer episode, else 0.",
	"corral_handler_slow_consumer_episodes_total": "Slow-consumer episodes begun.",
	"corral_handler_duration_seconds":             "Handler call durations, sampled (every call after one slower than 20µs, else one in eight, counting for eight).",
	"corral_publisher_buffered_messages":          "Messages accepted and not yet settled.",
	"corral_publisher_buffered_bytes":             "Bytes of the messages accepted and not yet settled.",
	"corral_publisher_in_flight_messages":         "Messages sent and not yet acknowledged.",
	"corral_publisher_published_total":            "Messages accepted by Publish.",
	"corral_publisher_acked_total":                "Messages a stream acknowledged.",
	"corral_publisher_retried_total":              "Sends made again.",
	"corral_publisher_failed_total":               "Messages that failed for good.",
	"corral_publisher_rejected_total":             "Publish calls refused for a full buffer.",
	"corral_tasks_lease_held":                     "1 while this process's worker of the queue holds its lease.",
	"corral_tasks_held":                           "Tasks this worker holds now.",
	"corral_tasks_capacity":                       "Tasks this worker may hold at once.",
	"corral_tasks_started_total":                  "Tasks this worker claimed and ran.",
	"corral_tasks_completed_total":                "Tasks this worker completed.",
	"corral_tasks_failed_total":                   "Task runs that returned an error or panicked.",
	"corral_tasks_recovered_total":                "Tasks of dead workers put back in the queue by this worker.",
	"corral_tasks_leases_lost_total":              "Times this worker lost its lease.",
	"corral_tasks_handed_back_total":              "Tasks this worker put back in the queue: handed back, or cut off by a stop.",
	"corral_tasks_duplicates_total":               "Copies of tasks held or finished elsewhere, dropped by this worker.",
	"corral_tasks_passed_over_total":              "Copies this worker let go unclaimed: not due, avoiding it, or taken ahead and given back.",
	"corral_tasks_rejected_total":                 "Outcomes not recorded because this worker's lease was lost.",
	"corral_tasks_unconfirmed_total":              "Outcomes whose write got no answer before this worker stopped or lost its lease.",
	"corral_tasks_cancelled_total":                "Tasks cancelled on this worker: a run cut short, or a copy dropped.",
	"corral_tasks_run_duration_seconds":           "Durations of this worker's runs, claim included, sampled as the handlers' are.",
	"corral_tasks_queue_waiting":                  "Tasks waiting in the queue's slot and not taken by a worker (from the queue's recoverer).",
	"corral_tasks_queue_taken":                    "Tasks taken by workers and not yet claimed or settled (from the queue's recoverer).",
	"corral_tasks_queue_oldest_waiting_seconds":   "Age of the oldest task waiting in the queue, 0 when none (from the queue's recoverer).",
	"corral_tasks_queue_dead_letters":             "Dead letters of the queue in its dead-letter stream (from the queue's recoverer).",
	"corral_tasks_queue_paused":                   "1 while the queue is paused, else 0 (from the queue's recoverer).",
}

// NewCollector returns the Prometheus collector of c's metrics, for an
// application that serves them with its own promhttp handler (New
// registers one itself). Every metric is named corral_... and carries
// the label client, c's name, so one registry takes one Client of each
// name. Each is read from c's Status when scraped, so nothing costs the
// handlers anything between scrapes; labels are bounded by what the
// application declares (handler, child and task-queue names), never per
// message. Counters count since the Client was made, but for
// corral_child_restarts_total, which counts since the current Run began.
func NewCollector(c *corral.Client) prometheus.Collector { return newCollector(c) }

func newCollector(c *corral.Client) *collector {
	k := &collector{c: c, d: make(map[string]*prometheus.Desc, len(metricHelp))}
	consts := prometheus.Labels{"client": c.String()}
	for name, help := range metricHelp {
		var labels []string
		switch {
		case strings.HasPrefix(name, "corral_handler_"):
			labels = []string{"handler"}
		case strings.HasPrefix(name, "corral_child_"):
			labels = []string{"child"}
		case name == "corral_tasks_queue_waiting":
			labels = []string{"queue", "slot"}
		case strings.HasPrefix(name, "corral_tasks_"):
			labels = []string{"queue"}
		}
		k.d[name] = prometheus.NewDesc(name, help, labels, consts)
	}
	return k
}

// Describe sends every metric's description.
func (k *collector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range k.d {
		ch <- d
	}
}

// Collect reads the Client's Status and sends every metric.
func (k *collector) Collect(ch chan<- prometheus.Metric) {
	st := k.c.Status()
	counter := func(name string, v uint64, label ...string) {
		ch <- constMetric(k.d[name], prometheus.CounterValue, float64(v), label...)
	}
	gauge := func(name string, v float64, label ...string) {
		ch <- constMetric(k.d[name], prometheus.GaugeValue, v, label...)
	}
	gauge("corral_connection_connected", bool01(st.Connection.State == connection.StateConnected))
	counter("corral_connection_reconnects_total", st.Connection.Reconnects)
	for _, child := range append(st.Children, childrenOf(st)...) {
		if child.Name == "" { // a task worker between its runs
			continue
		}
		gauge("corral_child_up", bool01(child.State == supervisor.Running), child.Name)
		counter("corral_child_restarts_total", uint64(child.Restarts), child.Name)
	}
	k.collectHandlers(ch, st, counter, gauge)
	p := st.Publisher
	gauge("corral_publisher_buffered_messages", float64(p.Buffered))
	gauge("corral_publisher_buffered_bytes", float64(p.BufferedBytes))
	gauge("corral_publisher_in_flight_messages", float64(p.InFlight))
	counter("corral_publisher_published_total", p.Published)
	counter("corral_publisher_acked_total", p.Acked)
	counter("corral_publisher_retried_total", p.Retried)
	counter("corral_publisher_failed_total", p.Failed)
	counter("corral_publisher_rejected_total", p.Rejected)
	k.collectTasks(ch, st, counter, gauge)
}

func (k *collector) collectHandlers(ch chan<- prometheus.Metric, st corral.Status,
	counter func(string, uint64, ...string), gauge func(string, float64, ...string)) {
	hists := k.c.Consumers().Histograms(latencyBounds)
	for _, h := range st.Handlers {
		n, cn := h.Name, h.Counters
		gauge("corral_handler_ready", bool01(h.Ready), n)
		counter("corral_handler_received_total", cn.Received, n)
		counter("corral_handler_processed_total", cn.Processed, n)
		counter("corral_handler_failed_total", cn.Failed, n)
		counter("corral_handler_panicked_total", cn.Panicked, n)
		counter("corral_handler_dropped_total", cn.Dropped, n)
		counter("corral_handler_rejected_total", cn.Rejected, n)
		if h.Stream != "" {
			counter("corral_handler_acked_total", cn.Acked, n)
			counter("corral_handler_naked_total", cn.Naked, n)
			counter("corral_handler_terminated_total", cn.Terminated, n)
			counter("corral_handler_dead_lettered_total", cn.DeadLettered, n)
		}
		gauge("corral_handler_queue_depth", float64(cn.QueueDepth), n)
		gauge("corral_handler_queue_capacity", float64(h.QueueSize), n)
		gauge("corral_handler_in_flight", float64(cn.InFlight), n)
		gauge("corral_handler_workers", float64(h.Workers), n)
		gauge("corral_handler_slow_consumer", bool01(h.SlowConsumer), n)
		counter("corral_handler_slow_consumer_episodes_total", cn.SlowConsumerEpisodes, n)
		hist, ok := hists[n]
		if !ok || len(hist.Buckets) != len(latencyBounds) { // removed since Status
			continue
		}
		ch <- constHistogram(k.d["corral_handler_duration_seconds"], hist, latencyBounds, n)
	}
}

// constHistogram is h (a handler's or a worker's: the pool's one
// histogram type), read at bounds, as a Prometheus histogram; a mistake is reported to the scraper as an invalid metric.
func constHistogram(d *prometheus.Desc, h tasks.Histogram, bounds []time.Duration, label ...string) prometheus.Metric {
	buckets := make(map[float64]uint64, len(bounds))
	for i, b := range bounds {
		buckets[b.Seconds()] = h.Buckets[i]
	}
	m, err := prometheus.NewConstHistogram(d, h.Count, h.Sum.Seconds(), buckets, label...)
	if err != nil {
		return prometheus.NewInvalidMetric(d, err)
	}
	return m
}

// childrenOf lists the children below the tree's own: each handler, task
// worker and watch, named as in the tree.
func childrenOf(st corral.Status) []supervisor.ChildStatus {
	var out []supervisor.ChildStatus
	for _, h := range st.Handlers {
		out = append(out, h.Child)
	}
	for _, t := range st.Tasks {
		out = append(out, t.Child)
	}
	return append(out, st.Watches...)
}

func bool01(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

// constMetric is prometheus.MustNewConstMetric without the panic: a
// mistake is reported to the scraper as an invalid metric.
func constMetric(d *prometheus.Desc, t prometheus.ValueType, v float64, label ...string) prometheus.Metric {
	m, err := prometheus.NewConstMetric(d, t, v, label...)
	if err != nil {
		return prometheus.NewInvalidMetric(d, err)
	}
	return m
}
