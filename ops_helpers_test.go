package corral_test

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// newRegistry is an application's registry, holding a metric of its own
// that was counted three times.
func newRegistry(t *testing.T) *prometheus.Registry {
	t.Helper()
	reg := prometheus.NewRegistry()
	requests := prometheus.NewCounter(prometheus.CounterOpts{Name: "app_requests_total", Help: "The application's own."})
	reg.MustRegister(requests)
	requests.Add(3)
	return reg
}

// metricFamilies is a scrape, parsed by Prometheus's text parser.
type metricFamilies struct {
	text     string
	families map[string]*dto.MetricFamily
}

// scrape asks h for /metrics and parses what it serves.
func scrape(t *testing.T, h http.Handler) metricFamilies {
	t.Helper()
	code, body := get(t, h, "/metrics")
	if code != http.StatusOK {
		t.Fatalf("/metrics: got %d %q", code, body)
	}
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(strings.NewReader(body))
	if err != nil {
		t.Fatalf("/metrics does not parse: %v\n%s", err, body)
	}
	return metricFamilies{text: body, families: families}
}

// find returns the sample of name whose label is value (any sample when
// label is empty).
func (m metricFamilies) find(name, label, value string) *dto.Metric {
	f := m.families[name]
	if f == nil {
		return nil
	}
	for _, s := range f.GetMetric() {
		if label == "" {
			return s
		}
		for _, l := range s.GetLabel() {
			if l.GetName() == label && l.GetValue() == value {
				return s
			}
		}
	}
	return nil
}

// value is the counter's or gauge's value, -1 when there is none.
func (m metricFamilies) value(name, label, value string) float64 {
	s := m.find(name, label, value)
	switch {
	case s == nil:
		return -1
	case s.Counter != nil:
		return s.GetCounter().GetValue()
	case s.Gauge != nil:
		return s.GetGauge().GetValue()
	}
	return -1
}

// histogramCount is a handler's histogram's sample count, after checking
// that its buckets never decrease.
func (m metricFamilies) histogramCount(name, handler string) uint64 {
	s := m.find(name, "handler", handler)
	if s == nil || s.Histogram == nil {
		return 0
	}
	var last uint64
	for _, b := range s.GetHistogram().GetBucket() {
		if b.GetCumulativeCount() < last {
			return 0
		}
		last = b.GetCumulativeCount()
	}
	return s.GetHistogram().GetSampleCount()
}

// label is the value of label on the first sample of name.
func (m metricFamilies) label(name, label string) string {
	s := m.find(name, "", "")
	for _, l := range s.GetLabel() {
		if l.GetName() == label {
			return l.GetValue()
		}
	}
	return ""
}

// flakyWatch is a watch that fails when told to, then runs on.
type flakyWatch struct {
	name string
	fail chan struct{}
}

func newFlakyWatch(name string) *flakyWatch {
	return &flakyWatch{name: name, fail: make(chan struct{}, 1)}
}

func (w *flakyWatch) String() string { return w.name }

func (w *flakyWatch) Serve(ctx context.Context) error {
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-w.fail:
		return errors.New("told to fail")
	}
}

// failOnce makes the watch fail once.
func (w *flakyWatch) failOnce(t *testing.T) {
	t.Helper()
	select {
	case w.fail <- struct{}{}:
	default:
		t.Fatal("the last failure was not taken yet")
	}
}
