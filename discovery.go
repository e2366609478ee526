package corral

import (
	"github.com/nats-io/nuid"

	"github.com/corral-go/corral/fleet"
	"github.com/corral-go/corral/internal/conf"
	"github.com/corral-go/corral/internal/subject"
	"github.com/corral-go/corral/supervisor"
)

// DiscoveryConfig configures how the Client answers the fleet's requests
// (package fleet): $CORRAL.PING and $CORRAL.STATUS, for every process, for
// the instances of its name, and for it alone, with its identity and,
// asked for it, its Status as JSON. The corral command and the status
// page's fleet view ask them.
type DiscoveryConfig struct {
	// Enabled answers the requests, as the child "discovery" of the tree.
	// Whoever may publish to $CORRAL.> sees the Client's Status: restrict
	// it with the server's permissions (see package fleet). Default true.
	Enabled *bool `yaml:"enabled"`
	// Version is the application's version in the answers. Default: the
	// main module's version, as the build records it.
	Version string `yaml:"version"`
	// Restart is the child's restart policy; it inherits the top-level
	// one.
	Restart supervisor.Policy `yaml:"restart"`
}

func (d DiscoveryConfig) enabled() bool { return d.Enabled == nil || *d.Enabled }

// validate checks the section, and that name, the Client's, can be a
// token of the fleet's subjects.
func (d DiscoveryConfig) validate(p conf.Problems, name string) {
	if !d.enabled() {
		return
	}
	if name == "" {
		name = defaultName
	}
	if err := subject.ValidName(name); err != nil {
		p.Addf("name", "%v: it is a token of the fleet's subjects ($CORRAL.PING.<name>); or set discovery.enabled: false", err)
	}
	p.Merge("discovery.restart", d.Restart.Validate())
}

// Identity is who the Client answers the fleet's requests as: its name, an
// instance ID made by New, its host, pid and versions, and, once it runs,
// its uptime.
func (c *Client) Identity() fleet.Identity {
	if c.discovery != nil {
		return c.discovery.Identity()
	}
	return c.identity
}

// addDiscovery adds the child that answers the fleet's requests, unless
// the configuration turns it off.
func (c *Client) addDiscovery() error {
	c.identity = fleet.Self(c.cfg.Name, nuid.Next())
	if v := c.cfg.Discovery.Version; v != "" {
		c.identity.Version = v
	}
	if !c.cfg.Discovery.enabled() {
		return nil
	}
	r, err := fleet.NewResponder(fleet.Config{Identity: c.identity, Status: func() any { return c.Status() }, Events: c.events}, c.conn)
	if err != nil {
		return err
	}
	if err := c.tree.Add(r.String(), r, c.cfg.Discovery.Restart.Inherit(c.cfg.Restart)); err != nil {
		return err
	}
	c.discovery = r
	return nil
}
