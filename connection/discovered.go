package connection

import (
	"net"
	"net/url"
	"slices"
	"strings"

	"github.com/nats-io/nats.go"
)

// discovered returns the servers in nc's pool beyond seeds: those the
// cluster announced to it, and those an earlier connection learned and
// this one was given. Each carries the credentials of the URL nc is
// connected to, as nats.go itself dials announced servers.
func discovered(nc *nats.Conn, seeds []string) []string {
	known := make(map[string]bool, len(seeds))
	for _, s := range seeds {
		known[hostPort(s)] = true
	}
	var user *url.Userinfo
	if cur, err := url.Parse(nc.ConnectedUrl()); err == nil {
		user = cur.User
	}
	var out []string
	for _, s := range nc.Servers() {
		if known[hostPort(s)] {
			continue
		}
		if u, err := url.Parse(s); err == nil && user != nil {
			u.User = user
			s = u.String()
		}
		out = append(out, s)
	}
	return out
}

// withDiscovered returns seeds followed by the servers of found that are
// not among them.
func withDiscovered(seeds, found []string) []string {
	out := slices.Clone(seeds)
	known := make(map[string]bool, len(seeds)+len(found))
	for _, s := range seeds {
		known[hostPort(s)] = true
	}
	for _, f := range found {
		if k := hostPort(f); !known[k] {
			known[k] = true
			out = append(out, f)
		}
	}
	return out
}

// hostPort is the host and port a server URL dials, the default port
// filled in.
func hostPort(s string) string {
	u, err := url.Parse(s)
	if err != nil || u.Host == "" {
		return s
	}
	port := u.Port()
	if port == "" {
		switch strings.ToLower(u.Scheme) {
		case "ws":
			port = "80"
		case "wss":
			port = "443"
		default:
			port = "4222"
		}
	}
	return net.JoinHostPort(strings.ToLower(u.Hostname()), port)
}
