package corral

import (
	"net"
	"net/http"
	"strconv"

	"github.com/corral-go/corral/internal/conf"
	"github.com/corral-go/corral/internal/event"
	"github.com/corral-go/corral/supervisor"
)

// OpsConfig configures where the Client serves its operations endpoints
// (package ops: health, readiness, Prometheus metrics, the Status
// snapshot as JSON, and the status page).
type OpsConfig struct {
	// Listen is the address (host:port) where the Client serves the
	// handler WithOps builds, as the child "ops" of its tree; port 0 picks
	// a free port, which Client.OpsAddr reports. New refuses it without
	// WithOps. The endpoints have no authentication of their own: listen
	// on loopback, or mount the handler behind the application's auth
	// instead; an address with no host (":9090"), 0.0.0.0 or [::] listens
	// on every interface, which the OpsListening event warns of at start.
	// Default none: the Client listens on nothing.
	Listen string `yaml:"listen"`
	// Page serves the status page at "/" of the listener. Default true.
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

// noOpsProblem is New's complaint about ops.listen with nothing to serve.
const noOpsProblem = "set, but there is nothing to serve: pass corral.WithOps(ops.New) " +
	"(package github.com/corral-go/corral/ops)"

// WithOps builds the Client's operations handler once New has built the
// tree: package ops serves health, readiness, Prometheus metrics, the
// Status snapshot and the status page:
//
//	client, err := corral.New(cfg, corral.WithOps(ops.New))
//
// With ops.listen set, the Client serves the handler there, as the child
// "ops" of its tree, added first so that it stops last and answers
// through a shutdown; Ready and ops' /readyz wait for it to listen.
// Without, OpsHandler returns it for the application to mount. Only a
// program that names package ops links Prometheus. An error from build
// fails New.
func WithOps[H http.Handler](build func(*Client) (H, error)) Option {
	return func(o *options) {
		if build == nil {
			o.ops = nil
			return
		}
		o.ops = func(c *Client) (http.Handler, error) {
			h, err := build(c)
			if err != nil {
				return nil, err
			}
			return h, nil
		}
	}
}

// OpsHandler returns the handler WithOps built, or nil without WithOps.
func (c *Client) OpsHandler() http.Handler {
	if c.ops == nil {
		return nil
	}
	return c.ops.handler
}

// OpsAddr returns the address the ops listener is bound to (the port
// chosen when ops.listen's is 0), or "" while it is not listening or
// when ops.listen is not set.
func (c *Client) OpsAddr() string {
	if c.ops == nil || c.ops.server == nil {
		return ""
	}
	return c.ops.server.Addr()
}

// opsChild is what WithOps adds: the handler, and its listener when
// ops.listen is set.
type opsChild struct {
	handler http.Handler
	server  *opsServer // nil without ops.listen
}

// addOps adds the ops listener to the tree, when WithOps is given and
// ops.listen is set; it serves the handler buildOps makes at the end of
// New.
func (c *Client) addOps(build func(*Client) (http.Handler, error)) error {
	if build == nil {
		return nil
	}
	c.ops = &opsChild{}
	if c.cfg.Ops.Listen == "" {
		return nil
	}
	c.ops.server = &opsServer{addr: c.cfg.Ops.Listen, page: c.cfg.Ops.page(), events: event.New(c.events)}
	return c.tree.Add(c.ops.server.String(), c.ops.server, c.cfg.Ops.Restart.Inherit(c.cfg.Restart))
}

// buildOps builds the handler WithOps names, for OpsHandler and the
// listener.
func (c *Client) buildOps(build func(*Client) (http.Handler, error)) error {
	if build == nil {
		return nil
	}
	h, err := build(c)
	if err != nil {
		return err
	}
	c.ops.handler = h
	if c.ops.server != nil {
		c.ops.server.handler = h
	}
	return nil
}
