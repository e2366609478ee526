package ops_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/corral-go/corral/corraltest"
)

// start runs the kit's Client until the test ends, waits until it is
// ready, and returns a ctx for the test's calls.
func start(t *testing.T, k *corraltest.Kit) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	k.Start(ctx)
	return ctx
}

// get asks h for path and returns the status code and body.
func get(t *testing.T, h http.Handler, path string) (int, string) {
	t.Helper()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, path, nil))
	return rec.Code, rec.Body.String()
}

// getURL asks the listener at addr for path.
func getURL(t *testing.T, addr, path string) (int, string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+addr+path, nil)
	if err != nil {
		return 0, "", err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body), err
}

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
