package connection

import (
	"strings"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/corral-go/corral/internal/conf"
	"github.com/corral-go/corral/internal/subject"
)

// JetStreamAPI says which JetStream a client's API requests reach. The
// zero value is the account's own JetStream, on the server the client is
// connected to or a cluster routed to it ($JS.API). Domain reaches the
// JetStream of another domain across leaf nodes: a leaf node's client
// reaches its hub with Domain "hub" ($JS.hub.API). APIPrefix reaches a
// JetStream another account exports, under the prefix the importing
// account maps it to. At most one of the two is set.
//
// Only API requests (declarations, lookups, pulls, direct gets, KV and
// object store operations) are addressed to it. Messages published to a
// stream's subjects are routed by subject as any message is: they reach a
// stream in another domain across a leaf node when no stream of the
// local domain listens on those subjects.
type JetStreamAPI struct {
	// Domain is the JetStream domain, a name without '.', '*', '>' or
	// whitespace, as the servers' jetstream.domain.
	Domain string `yaml:"domain" json:"domain,omitempty"`
	// APIPrefix is the subject prefix an account imports another's
	// JetStream API under ("JS.orders.API"), for JetStream shared across
	// accounts.
	APIPrefix string `yaml:"api_prefix" json:"api_prefix,omitempty"`
}

// defaultAPIPrefix is the account's own JetStream API.
const defaultAPIPrefix = "$JS.API."

// reservedDomains are the names a server refuses as a domain: they are
// tokens of JetStream's own subjects ($JS.ACK, $JS.FC, ...).
var reservedDomains = []string{"ACK", "FC", "SNAPSHOT", "EVENT"}

// Validate reports a Domain or APIPrefix that is not a valid name or
// subject, and both set at once.
func (a JetStreamAPI) Validate() error {
	p := conf.NewProblems("")
	if a.Domain != "" && a.APIPrefix != "" {
		p.Addf("domain", "%q and api_prefix %q are both set: a JetStream is reached by one or the other", a.Domain, a.APIPrefix)
	}
	if d := a.Domain; d != "" {
		switch {
		case strings.ContainsAny(d, ".*> \t\r\n"):
			p.Addf("domain", "%q must be one subject token: no '.', '*', '>' or whitespace", d)
		case strings.HasPrefix(d, "$"):
			p.Addf("domain", "%q must not start with '$'", d)
		default:
			for _, r := range reservedDomains {
				if d == r {
					p.Addf("domain", "%q is reserved by JetStream ($JS.%s)", d, r)
				}
			}
			if err := subject.CheckLen("domain", d, subject.MaxLen/4); err != nil {
				p.Addf("domain", "%v", err)
			}
		}
	}
	if pre := a.APIPrefix; pre != "" {
		if err := subject.Validate(strings.TrimSuffix(pre, "."), false); err != nil {
			p.Addf("api_prefix", "%v", err)
		} else if err := subject.CheckLen("api_prefix", pre, subject.MaxLen/4); err != nil {
			p.Addf("api_prefix", "%v", err)
		}
	}
	return p.Err()
}

// IsZero reports whether a is the account's own JetStream.
func (a JetStreamAPI) IsZero() bool { return a == JetStreamAPI{} }

// Or is a when it names a JetStream, def otherwise: a handler's,
// queue's or bucket's own JetStreamAPI overrides the Client's.
func (a JetStreamAPI) Or(def JetStreamAPI) JetStreamAPI {
	if a.IsZero() {
		return def
	}
	return a
}

// Prefix is the subject prefix of the API requests, ending in '.':
// "$JS.API.", "$JS.hub.API." or the APIPrefix.
func (a JetStreamAPI) Prefix() string {
	switch {
	case a.Domain != "":
		return "$JS." + a.Domain + ".API."
	case a.APIPrefix != "":
		return strings.TrimSuffix(a.APIPrefix, ".") + "."
	}
	return defaultAPIPrefix
}

// New returns a jetstream.JetStream on nc whose requests reach a.
func (a JetStreamAPI) New(nc *nats.Conn, opts ...jetstream.JetStreamOpt) (jetstream.JetStream, error) {
	switch {
	case a.Domain != "":
		return jetstream.NewWithDomain(nc, a.Domain, opts...)
	case a.APIPrefix != "":
		return jetstream.NewWithAPIPrefix(nc, a.APIPrefix, opts...)
	}
	return jetstream.New(nc, opts...)
}

// String names a for errors and status: "domain hub", "api_prefix
// JS.orders.API", or "the account's own" for the zero value.
func (a JetStreamAPI) String() string {
	switch {
	case a.Domain != "":
		return "domain " + a.Domain
	case a.APIPrefix != "":
		return "api_prefix " + a.APIPrefix
	}
	return "the account's own"
}
