package corral

import (
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"strings"

	"github.com/corral-go/corral/internal/conf"
	"github.com/corral-go/corral/internal/event"
	"github.com/corral-go/corral/supervisor"
)

// OpsConfig configures the operations endpoints that Client.OpsHandler
// serves: health, readiness, Prometheus metrics, the Status snapshot as
// JSON, and the status page.
type OpsConfig struct {
	// Listen is the address (host:port) where the Client serves
	// OpsHandler itself, as the child "ops" of its tree; port 0 picks a
	// free port, which Client.OpsAddr reports. The endpoints have no
	// authentication of their own: listen on loopback, or mount
	// OpsHandler behind the application's auth instead. Default none: the
	// Client listens on nothing.
	Listen string `yaml:"listen"`
	// Page serves the status page at "/". Default true.
	Page *bool `yaml:"page"`
	// Restart is the listener's restart policy; it inherits the top-level
	// one.
	Restart supervisor.Policy `yaml:"restart"`
}

// Validate reports every invalid field at once, wrapping ErrInvalidConfig.
func (o OpsConfig) Validate() error {
	p := conf.NewProblems("")
	if o.Listen != "" {
		_, port, err := net.SplitHostPort(o.Listen)
		if err != nil {
			p.Addf("listen", "%q is not host:port: %v", o.Listen, err)
		} else if n, err := strconv.ParseUint(port, 10, 16); err != nil || (n == 0 && port != "0") {
			p.Addf("listen", "port %q of %q is not a number from 0 to 65535", port, o.Listen)
		}
	}
	p.Merge("restart", o.Restart.Validate())
	return p.Err()
}

func (o OpsConfig) page() bool { return o.Page == nil || *o.Page }

// OpsHandler returns the handler of the operations endpoints, for the
// application to mount on its own server (under a prefix with
// http.StripPrefix, behind its own auth), or served by the Client at
// ops.listen:
//
//   - GET /healthz: 200 while Run runs, 503 otherwise;
//   - GET /readyz: 200 when everything Ready waits for is ready (the
//     connection up, the publisher's streams declared, every handler
//     subscribed or consuming, every task worker leased, every watch
//     synced, and the ops listener bound when ops.listen is set), 503
//     listing what is not;
//   - GET /metrics: Prometheus metrics (see WithMetricsRegistry);
//   - GET /status: the Status snapshot as JSON;
//   - GET /: the status page, unless ops.page is false.
//
// Nothing it serves holds a credential: server URLs are redacted as in
// Status and the logs. It is safe for concurrent use, and serves whether
// the Client runs or not.
func (c *Client) OpsHandler() http.Handler { return c.ops.mux }

// OpsAddr is the address the ops listener is bound to, empty when
// ops.listen is not set or the listener is not up.
func (c *Client) OpsAddr() string {
	if c.ops.server == nil {
		return ""
	}
	return c.ops.server.Addr()
}

// ops is what serves the operations endpoints.
type ops struct {
	mux     *http.ServeMux
	metrics *metrics
	page    *page
	server  *opsServer // nil without ops.listen
}

// addOps makes the ops endpoints, and adds their listener to the tree
// when ops.listen is set; the metrics are registered by New's end (see
// metrics.register), once nothing can fail.
func (c *Client) addOps(m *metrics) error {
	c.ops = &ops{mux: http.NewServeMux(), metrics: m}
	mux := c.ops.mux
	mux.HandleFunc("GET /healthz", c.serveHealth)
	mux.HandleFunc("GET /readyz", c.serveReady)
	mux.HandleFunc("GET /metrics", func(w http.ResponseWriter, r *http.Request) { c.ops.metrics.handler.ServeHTTP(w, r) })
	mux.HandleFunc("GET /status", c.serveStatus)
	if c.cfg.Ops.page() {
		pg, err := newPage(c)
		if err != nil {
			return err
		}
		c.ops.page = pg
		mux.HandleFunc("GET /{$}", c.ops.page.serve)
	}
	if c.cfg.Ops.Listen == "" {
		return nil
	}
	c.ops.server = &opsServer{addr: c.cfg.Ops.Listen, handler: mux, events: event.New(c.events)}
	return c.tree.Add(c.ops.server.String(), c.ops.server, c.cfg.Ops.Restart.Inherit(c.cfg.Restart))
}

func (c *Client) serveHealth(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	if !c.ready.snapshot().running {
		w.WriteHeader(http.StatusServiceUnavailable)
		fmt.Fprintln(w, "not running")
		return
	}
	fmt.Fprintln(w, "ok")
}

func (c *Client) serveReady(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	if names, _ := c.pending(c.ready.snapshot(), true); len(names) > 0 {
		w.WriteHeader(http.StatusServiceUnavailable)
		fmt.Fprintf(w, "not ready: %s\n", strings.Join(names, ", "))
		return
	}
	fmt.Fprintln(w, "ready")
}

func (c *Client) serveStatus(w http.ResponseWriter, _ *http.Request) {
	body, err := json.MarshalIndent(c.Status(), "", "  ")
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	_, _ = w.Write(append(body, '\n'))
}
