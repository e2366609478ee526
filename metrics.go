package corral

import (
	"fmt"
	"net/http"
	"sync"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/corral-go/corral/connection"
	"github.com/corral-go/corral/consumer"
	"github.com/corral-go/corral/supervisor"
	"github.com/corral-go/corral/tasks"
)

// MetricsRegistry is where a Client registers its Prometheus metrics and
// what OpsHandler's /metrics serves: a *prometheus.Registry satisfies it.
type MetricsRegistry interface {
	prometheus.Registerer
	prometheus.Gatherer
}

// opsOptions are the options of the ops endpoints and of logging.
type opsOptions struct {
	registry MetricsRegistry
}

// WithMetricsRegistry registers the Client's metrics in reg, so that the
// application's own metrics and Corral's are served together, by
// OpsHandler's /metrics or by the application's promhttp handler. New
// fails if reg refuses them (a second Client of the same name in one
// registry). Default: a registry of the Client's own, with Go's runtime
// and process collectors.
//
// Every metric is named corral_... and carries the label client (the
// Client's name). Most are read from Status when scraped; restarts,
// reconnects, slow-consumer episodes and lost leases are counted from
// the tree's events since New. Nothing costs the handlers anything
// between scrapes. Labels are bounded by what the application declares
// (handler, child and task-queue names), never per message.
func WithMetricsRegistry(reg MetricsRegistry) Option {
	return func(o *options) { o.ops.registry = reg }
}

// metrics counts, from the tree's events, what Status does not keep
// (restarts across Runs, reconnects, episodes, lost leases), and holds
// the registry /metrics serves.
type metrics struct {
	handler http.Handler // /metrics

	mu           sync.Mutex
	reconnects   uint64
	restarts     map[string]uint64 // by child
	slowEpisodes map[string]uint64 // by handler
	leasesLost   map[string]uint64 // by task queue
}

func newMetrics() *metrics {
	return &metrics{restarts: map[string]uint64{}, slowEpisodes: map[string]uint64{}, leasesLost: map[string]uint64{}}
}

// register registers c's collector in reg, or in a registry of c's own
// when reg is nil, and serves that registry.
func (m *metrics) register(c *Client, reg MetricsRegistry) error {
	if reg == nil {
		r := prometheus.NewRegistry()
		r.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
		reg = r
	}
	if err := reg.Register(newCollector(c, m)); err != nil {
		return fmt.Errorf("corral: metrics of client %q: %w", c.cfg.Name, err)
	}
	m.handler = promhttp.HandlerFor(reg, promhttp.HandlerOpts{})
	return nil
}

// hook sees every event before next.
func (m *metrics) hook(next supervisor.Hook) supervisor.Hook {
	return func(ev supervisor.Event) {
		m.observe(ev)
		if next != nil {
			next(ev)
		}
	}
}

func (m *metrics) observe(ev supervisor.Event) {
	switch ev := ev.(type) {
	case supervisor.ChildStarted:
		if ev.Restarts > 0 {
			m.add(m.restarts, ev.Child)
		}
	case connection.Reconnected:
		m.mu.Lock()
		m.reconnects++
		m.mu.Unlock()
	case consumer.SlowConsumerStarted:
		m.add(m.slowEpisodes, ev.Handler)
	case tasks.LeaseLost:
		m.add(m.leasesLost, ev.Queue)
	}
}

func (m *metrics) add(counts map[string]uint64, key string) {
	m.mu.Lock()
	counts[key]++
	m.mu.Unlock()
}

// counts copies the event counts, for a scrape.
func (m *metrics) counts() (reconnects uint64, restarts, slow, lost map[string]uint64) {
	m.mu.Lock()
	defer m.mu.Unlock()
	cp := func(src map[string]uint64) map[string]uint64 {
		out := make(map[string]uint64, len(src))
		for k, v := range src {
			out[k] = v
		}
		return out
	}
	return m.reconnects, cp(m.restarts), cp(m.slowEpisodes), cp(m.leasesLost)
}
