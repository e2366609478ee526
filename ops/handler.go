package ops

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/corral-go/corral"
)

// Registry is where a Handler registers the Client's metrics and what its
// /metrics serves: a *prometheus.Registry satisfies it.
type Registry interface {
	prometheus.Registerer
	prometheus.Gatherer
}

// Config configures a Handler. Its zero value is valid; Config{}.New is
// New.
type Config struct {
	// Registry receives the Client's metrics (NewCollector), so that the
	// application's own and Corral's are served together, by /metrics or
	// by the application's promhttp handler. Default: a registry of the
	// Handler's own, with Go's runtime and process collectors.
	Registry Registry
}

// Handler serves the operations endpoints of one Client:
//
//   - GET /healthz: 200 while Run runs, 503 otherwise;
//   - GET /readyz: 200 when everything Ready waits for is ready (the
//     connection up, the publisher's streams declared, every handler
//     subscribed or consuming, every task worker leased, every watch
//     synced, and the ops listener bound when ops.listen is set), 503
//     listing what is not;
//   - GET /metrics: Prometheus metrics (see NewCollector);
//   - GET /status: the Status snapshot as JSON;
//   - GET /: the status page.
//
// Mount it on the application's own server (under a prefix with
// http.StripPrefix, behind its own auth: the page's links are relative),
// or let the Client serve it at ops.listen (corral.WithOps). Nothing it
// serves holds a credential: server URLs show none of their userinfo,
// not even the user name, as in Status. It is safe for concurrent use,
// and serves whether the Client runs or not.
type Handler struct {
	c       *corral.Client
	mux     *http.ServeMux
	metrics http.Handler
	page    *page
}

// New returns the operations endpoints of c, its metrics in a registry of
// their own. It is what corral.WithOps takes: corral.WithOps(ops.New).
func New(c *corral.Client) (*Handler, error) { return Config{}.New(c) }

// New returns the operations endpoints of c as cfg says:
// corral.WithOps(ops.Config{Registry: reg}.New). It fails when the
// registry refuses c's metrics, as it does a second Client of the same
// name.
func (cfg Config) New(c *corral.Client) (*Handler, error) {
	reg := cfg.Registry
	if reg == nil {
		r := prometheus.NewRegistry()
		r.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
		reg = r
	}
	if err := reg.Register(NewCollector(c)); err != nil {
		return nil, fmt.Errorf("ops: metrics of client %q: %w", c, err)
	}
	pg, err := newPage(c)
	if err != nil {
		return nil, err
	}
	h := &Handler{c: c, mux: http.NewServeMux(), metrics: promhttp.HandlerFor(reg, promhttp.HandlerOpts{}), page: pg}
	h.mux.HandleFunc("GET /healthz", h.serveHealth)
	h.mux.HandleFunc("GET /readyz", h.serveReady)
	h.mux.Handle("GET /metrics", h.metrics)
	h.mux.HandleFunc("GET /status", h.serveStatus)
	h.mux.HandleFunc("GET /{$}", h.page.serve)
	return h, nil
}

// ServeHTTP serves the endpoints.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) { h.mux.ServeHTTP(w, r) }

func (h *Handler) serveHealth(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	if !h.c.Status().Running {
		w.WriteHeader(http.StatusServiceUnavailable)
		fmt.Fprintln(w, "not running")
		return
	}
	fmt.Fprintln(w, "ok")
}

func (h *Handler) serveReady(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	if names := h.c.Status().NotReady; len(names) > 0 {
		w.WriteHeader(http.StatusServiceUnavailable)
		fmt.Fprintf(w, "not ready: %s\n", strings.Join(names, ", "))
		return
	}
	fmt.Fprintln(w, "ready")
}

func (h *Handler) serveStatus(w http.ResponseWriter, _ *http.Request) {
	body, err := json.MarshalIndent(h.c.Status(), "", "  ")
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	_, _ = w.Write(append(body, '\n'))
}
