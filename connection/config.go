package connection

import (
	"fmt"
	"io"
	"net/url"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/corral-go/corral/internal/conf"
	"github.com/corral-go/corral/supervisor"
)

// Config configures the connection supervisor. With no Servers it connects
// to Embedded, and without that to nats://127.0.0.1:4222; every other zero
// field takes the default its comment states.
type Config struct {
	// Servers are the URLs to connect to (nats://, tls://, ws://, wss://),
	// a port, when one is named, from 1 to 65535. Empty: the embedded
	// server. Credentials in URLs may hold any character, commas included,
	// and are read percent-decoded: a list variable, which separates the
	// servers at commas, takes a comma in a password as %2C. They are never
	// printed (see Redact and Config.Format), and a URL that does not parse
	// is not printed at all.
	// The servers a cluster announces are kept (Status.Discovered) and
	// dialled after these when the connection is replaced.
	Servers []string `yaml:"servers"`
	// Name is the connection name the server shows. Default "corral".
	Name string `yaml:"name"`
	// ReconnectWait is the wait after every server in the list failed
	// once; it doubles after each further round, up to MaxReconnectWait.
	// Range 0 to 24h. Default 250ms.
	ReconnectWait time.Duration `yaml:"reconnect_wait"`
	// MaxReconnectWait caps ReconnectWait's growth. Range 0 to 24h.
	// Default 4s.
	MaxReconnectWait time.Duration `yaml:"max_reconnect_wait"`
	// ReconnectJitter is the random time, up to this, added to each wait so
	// that clients do not reconnect in step. Range 0 to 24h. Default
	// 250ms.
	ReconnectJitter time.Duration `yaml:"reconnect_jitter"`
	// Reconnect lets nats.go reconnect by itself when the connection
	// drops. false: a drop closes the connection for good, and the
	// connection's restart policy decides what follows (permanent and
	// transient make a new connection, temporary leaves it closed). The
	// first connection is still retried per RetryOnFailedConnect. Default
	// true.
	Reconnect *bool `yaml:"reconnect"`
	// MaxReconnects is how many times each server is retried before
	// nats.go gives up and closes the connection (the supervisor then
	// makes a new one). -1 or 0: never give up. Range -1 to 2147483647.
	// Default 0.
	MaxReconnects int `yaml:"max_reconnects"`
	// ReconnectBufSize bounds what is published while disconnected and
	// held until the connection is back. -1 disables the buffer: publishing
	// while disconnected then fails at once. Range -1 to 1TiB. Default
	// 8MiB.
	ReconnectBufSize conf.ByteSize `yaml:"reconnect_buf_size"`
	// PingInterval is how often the client pings the server. With
	// MaxPingsOutstanding it bounds how long a dead path (half-open TCP)
	// goes unnoticed: PingInterval × (MaxPingsOutstanding+1). Range 10ms
	// to 24h. Default 5s.
	PingInterval time.Duration `yaml:"ping_interval"`
	// MaxPingsOutstanding is how many pings may go unanswered before the
	// connection is declared stale and reconnected. Range 0 to 1000.
	// Default 2.
	MaxPingsOutstanding int `yaml:"max_pings_outstanding"`
	// ConnectTimeout bounds each dial and handshake. Range 0 to 24h.
	// Default 2s.
	ConnectTimeout time.Duration `yaml:"connect_timeout"`
	// RetryOnFailedConnect keeps trying when no server is up at start,
	// instead of failing. Default true.
	RetryOnFailedConnect *bool `yaml:"retry_on_failed_connect"`
	// NoRandomize tries Servers in order instead of shuffled. Default
	// false: shuffled, which spreads clients over a cluster.
	NoRandomize bool `yaml:"no_randomize"`
	// DrainTimeout bounds the drain at shutdown. Range 0 to 24h. Default
	// 10s.
	DrainTimeout time.Duration `yaml:"drain_timeout"`
	// TLS configures TLS; a tls:// URL or a CA or certificate here turns
	// it on.
	TLS TLSConfig `yaml:"tls"`
	// Auth holds at most one way to authenticate.
	Auth AuthConfig `yaml:"auth"`
	// Restart is the restart policy of the connection supervisor in a
	// tree; zero fields inherit the tree's policy.
	Restart supervisor.Policy `yaml:"restart"`

	// Events says where the connection's events go. corral.New sets it.
	Events supervisor.Events `yaml:"-" json:"-"`
	// Options are extra nats.go options, applied after Corral's own.
	Options []nats.Option `yaml:"-" json:"-"`
	// Embedded is the in-process server to connect to when Servers is
	// empty. corral.New sets it to the embedded server (package embedded).
	Embedded LocalServer `yaml:"-" json:"-"`
}

// TLSConfig configures TLS to the servers. Every field is empty by
// default: TLS only when a tls:// URL or the server asks for it, verified
// against the system's CAs.
type TLSConfig struct {
	// CAFile is a PEM file of the CAs that sign the servers' certificates.
	CAFile string `yaml:"ca_file"`
	// CertFile and KeyFile are the client's certificate and key (PEM),
	// for servers that verify clients.
	CertFile string `yaml:"cert_file"`
	KeyFile  string `yaml:"key_file"`
	// ServerName overrides the name checked against the server's
	// certificate (default: the host of the URL).
	ServerName string `yaml:"server_name"`
}

// AuthConfig holds at most one way to authenticate; all are empty by
// default (no authentication, or credentials in the server URLs). Secrets
// are never logged; String redacts them.
type AuthConfig struct {
	// Token is a bearer token.
	Token string `yaml:"token"`
	// User and Password authenticate by name.
	User     string `yaml:"user"`
	Password string `yaml:"password"`
	// NKeySeedFile is a file holding an NKey user seed.
	NKeySeedFile string `yaml:"nkey_seed_file"`
	// CredsFile is a decentralized-auth credentials file (JWT and seed).
	CredsFile string `yaml:"creds_file"`
}

// Format prints c with the credentials of its server URLs and its Auth
// secrets redacted, whatever the verb (%v, %+v, %#v, %s, ...), so that
// printing a Config, or a struct holding one, reveals none.
func (c Config) Format(f fmt.State, verb rune) {
	r := c.view() // without methods: printing it does not come back here
	if verb == 'v' && f.Flag('#') {
		s := fmt.Sprintf("%#v", r)
		_, _ = io.WriteString(f, "connection.Config"+s[strings.Index(s, "{"):])
		return
	}
	fmt.Fprintf(f, fmt.FormatString(f, verb), r)
}

// Format prints a as String does, and %#v as Go syntax with the token and
// password redacted: no verb reveals a secret.
func (a AuthConfig) Format(f fmt.State, verb rune) {
	if verb == 'v' && f.Flag('#') {
		s := fmt.Sprintf("%#v", a.view()) // without methods: printing it does not come back here
		_, _ = io.WriteString(f, "connection.AuthConfig"+s[strings.Index(s, "{"):])
		return
	}
	_, _ = io.WriteString(f, a.String())
}

func redactSecret(s string) string {
	if s == "" {
		return ""
	}
	return "redacted"
}

// String describes the authentication without its secrets, so that
// printing a Config with %v or %+v reveals none.
func (a AuthConfig) String() string {
	switch {
	case a.Token != "":
		return "{token: redacted}"
	case a.User != "":
		return "{user: " + a.User + ", password: redacted}"
	case a.NKeySeedFile != "":
		return "{nkey_seed_file: " + a.NKeySeedFile + "}"
	case a.CredsFile != "":
		return "{creds_file: " + a.CredsFile + "}"
	}
	return "{}"
}

func (t TLSConfig) enabled() bool {
	return t.CAFile != "" || t.CertFile != "" || t.KeyFile != "" || t.ServerName != ""
}

// The ranges of the connection's own settings; its durations are bounded
// by conf.MaxPolicyDuration and max_reconnects by conf.MaxCount.
const (
	// minPingInterval is the shortest ping interval: shorter only loads
	// the server.
	minPingInterval = 10 * time.Millisecond
	// maxPingsOutstanding bounds MaxPingsOutstanding: a thousand pings
	// unanswered is a dead path however short the interval.
	maxPingsOutstanding = 1000
	// maxReconnectBufSize bounds ReconnectBufSize: 1TiB, a limit nats.go
	// counts against, never allocates up front.
	maxReconnectBufSize = 1 << 40
)

// withDefaults returns c with zero fields set to their defaults.
func (c Config) withDefaults() Config {
	if c.Name == "" {
		c.Name = "corral"
	}
	if c.ReconnectWait == 0 {
		c.ReconnectWait = 250 * time.Millisecond
	}
	if c.MaxReconnectWait == 0 {
		c.MaxReconnectWait = max(4*time.Second, c.ReconnectWait)
	}
	if c.ReconnectJitter == 0 {
		c.ReconnectJitter = 250 * time.Millisecond
	}
	if c.ReconnectBufSize == 0 {
		c.ReconnectBufSize = 8 << 20
	}
	if c.PingInterval == 0 {
		c.PingInterval = 5 * time.Second
	}
	if c.MaxPingsOutstanding == 0 {
		c.MaxPingsOutstanding = 2
	}
	if c.ConnectTimeout == 0 {
		c.ConnectTimeout = 2 * time.Second
	}
	if c.RetryOnFailedConnect == nil {
		t := true
		c.RetryOnFailedConnect = &t
	}
	if c.Reconnect == nil {
		t := true
		c.Reconnect = &t
	}
	if c.DrainTimeout == 0 {
		c.DrainTimeout = 10 * time.Second
	}
	return c
}

// MinShutdownTimeout is the least shutdown timeout the supervisor needs:
// its drain timeout, and time for nats.go to close after it.
func (c Config) MinShutdownTimeout() time.Duration {
	return c.withDefaults().DrainTimeout + 5*time.Second
}

// Validate reports every invalid field at once, wrapping supervisor.ErrInvalidConfig.
// Files named by TLS and Auth must be readable.
func (c Config) Validate() error {
	p := conf.NewProblems("")
	for i, s := range c.Servers {
		validateURL(p.Under("servers"), i, s)
	}
	p.Durations(conf.MaxPolicyDuration,
		conf.NamedDuration{Name: "reconnect_wait", V: c.ReconnectWait},
		conf.NamedDuration{Name: "max_reconnect_wait", V: c.MaxReconnectWait},
		conf.NamedDuration{Name: "reconnect_jitter", V: c.ReconnectJitter},
		conf.NamedDuration{Name: "connect_timeout", V: c.ConnectTimeout},
		conf.NamedDuration{Name: "drain_timeout", V: c.DrainTimeout})
	if c.ReconnectWait > 0 && c.MaxReconnectWait > 0 && c.MaxReconnectWait < c.ReconnectWait {
		p.Addf("max_reconnect_wait", "%v is shorter than reconnect_wait %v", c.MaxReconnectWait, c.ReconnectWait)
	}
	switch {
	case c.PingInterval < 0:
		p.Addf("ping_interval", "must not be negative, got %v", c.PingInterval)
	case c.PingInterval != 0 && (c.PingInterval < minPingInterval || c.PingInterval > conf.MaxPolicyDuration):
		p.Addf("ping_interval", "must be 0 (default) or between %v and %v, got %v", minPingInterval, conf.MaxPolicyDuration, c.PingInterval)
	}
	p.Between("max_reconnects", int64(c.MaxReconnects), -1, conf.MaxCount)
	p.Between("max_pings_outstanding", int64(c.MaxPingsOutstanding), 0, maxPingsOutstanding)
	p.Between("reconnect_buf_size", int64(c.ReconnectBufSize), -1, maxReconnectBufSize)
	validateTLS(p.Under("tls"), c.TLS)
	validateAuth(p.Under("auth"), c.Auth)
	p.Merge("restart", c.Restart.Validate())
	return p.Err()
}

func validateURL(p conf.Problems, i int, s string) {
	field := "[" + strconv.Itoa(i) + "]"
	u, err := url.Parse(s)
	if err != nil {
		// Neither s nor err, which quotes it, is shown: a URL cut inside
		// its password (at a comma of a list variable, say) has no "@"
		// where Redact could tell the password from the host.
		p.Addf(field, "not a URL (%s; the rest is not shown, as it may hold credentials): %s", scheme(s), commaHint)
		return
	}
	switch strings.ToLower(u.Scheme) {
	case "nats", "tls", "ws", "wss":
	case "":
		p.Addf(field, "%s: no scheme: want nats://, tls://, ws:// or wss:// (%s)", Redact(s), commaHint)
		return
	default:
		p.Addf(field, "%s: scheme must be nats, tls, ws or wss", Redact(s))
		return
	}
	if u.Hostname() == "" {
		p.Addf(field, "%s: no host", Redact(s))
	}
	if port := u.Port(); port != "" {
		if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 {
			p.Addf(field, "%s: port %s is not between 1 and 65535", Redact(s), port)
		}
	}
	if (u.Path != "" && u.Path != "/") || u.RawQuery != "" || u.Fragment != "" {
		// Also what a password with '/', '?' or '#' looks like unescaped.
		p.Addf(field, "%s: a server URL has no path, query or fragment (escape them in credentials)", Redact(s))
	}
}

// commaHint says how a comma is written inside a server URL given in a
// list variable, which is cut at every comma.
const commaHint = "in a list variable (CORRAL_CONNECTION_SERVERS) commas separate the servers: write a comma inside credentials as %2C"

// scheme returns what a URL that does not parse may show of itself: its
// scheme, as "nats://…", when it is one a server URL has.
func scheme(s string) string {
	name, _, _ := strings.Cut(s, "://")
	switch strings.ToLower(name) {
	case "nats", "tls", "ws", "wss":
		return name + "://…"
	}
	return "no known scheme"
}

func validateTLS(p conf.Problems, t TLSConfig) {
	if (t.CertFile == "") != (t.KeyFile == "") {
		p.Addf("", "cert_file and key_file must be set together")
	}
	readable(p, "ca_file", t.CAFile)
	readable(p, "cert_file", t.CertFile)
	readable(p, "key_file", t.KeyFile)
}

func validateAuth(p conf.Problems, a AuthConfig) {
	var methods []string
	if a.Token != "" {
		methods = append(methods, "token")
	}
	if a.User != "" || a.Password != "" {
		methods = append(methods, "user/password")
	}
	if a.NKeySeedFile != "" {
		methods = append(methods, "nkey_seed_file")
	}
	if a.CredsFile != "" {
		methods = append(methods, "creds_file")
	}
	if len(methods) > 1 {
		p.Addf("", "set only one of token, user/password, nkey_seed_file, creds_file; got %s", strings.Join(methods, ", "))
	}
	if a.Password != "" && a.User == "" {
		p.Addf("user", "required with password")
	}
	readable(p, "nkey_seed_file", a.NKeySeedFile)
	readable(p, "creds_file", a.CredsFile)
}

func readable(p conf.Problems, field, path string) {
	if path == "" {
		return
	}
	f, err := os.Open(path)
	if err != nil {
		p.Addf(field, "%v", err)
		return
	}
	_ = f.Close()
}
