package corral

import (
	"fmt"
	"maps"
	"os"
	"slices"
	"time"

	"github.com/corral-go/corral/connection"
	"github.com/corral-go/corral/consumer"
	"github.com/corral-go/corral/internal/conf"
	"github.com/corral-go/corral/internal/subject"
	"github.com/corral-go/corral/kv"
	"github.com/corral-go/corral/objectstore"
	"github.com/corral-go/corral/publisher"
	"github.com/corral-go/corral/stream"
	"github.com/corral-go/corral/supervisor"
	"github.com/corral-go/corral/tasks"
)

// defaultName is the Client's name when Config.Name is empty.
const defaultName = "corral"

// EnvPrefix starts the name of every environment override: the field
// tagged "servers" in the section tagged "connection" is overridden by
// CORRAL_CONNECTION_SERVERS. Every variable named EnvPrefix + "_" and
// more must name a field (see Config.ApplyEnv).
const EnvPrefix = "CORRAL"

// ByteSize is a size in bytes, written in YAML as an integer or with a unit
// (B, KB, MB, GB, KiB, MiB, GiB), e.g. "64MiB".
type ByteSize = conf.ByteSize

// Config is the whole configuration of a Client. Its zero value is valid:
// an embedded nats-server with JetStream and the defaults of every
// section. Load it from YAML with LoadConfig, or build it in code.
type Config struct {
	// Name names the Client in logs and status, and is the default
	// connection name; with discovery on, it is a token of the fleet's
	// subjects: no whitespace, '.', '*', '>', '/' or '\'. Default "corral".
	Name string `yaml:"name"`
	// Connection configures the NATS connection. With no servers, the
	// Client runs the embedded server given to WithEmbeddedServer and
	// connects to it (New refuses no servers and no embedded server); but
	// only when neither the file nor the environment writes
	// connection.servers: a servers key left empty (`servers:`,
	// `servers: []`, a template that rendered nothing) is refused by
	// Validate, so that a production configuration never turns into a
	// local one unseen.
	Connection connection.Config `yaml:"connection"`
	// JetStreamAPI is the JetStream the Client's streams, consumers,
	// buckets, stores, locks and task queues are in, when it is not the
	// account's own: another domain's (a client of a leaf node reaching
	// its hub sets domain: hub) or one another account exports
	// (api_prefix). A handler, task queue, bucket, store or lock may
	// name its own under its jetstream key. Written `jetstream: {domain:
	// hub}`; CORRAL_JETSTREAM_DOMAIN overrides it.
	JetStreamAPI connection.JetStreamAPI `yaml:"jetstream"`
	// Server configures the embedded server; it is ignored when
	// connection.servers is set.
	Server ServerConfig `yaml:"server"`
	// Restart is the restart policy every child inherits; each section's
	// own restart field overrides it field by field.
	Restart supervisor.Policy `yaml:"restart"`
	// Streams declares JetStream streams by name, in one place for the
	// whole Client: each is created, or updated to match, by the
	// publisher when it connects, by every JetStream handler of it before
	// its consumer and by every handler whose dead letters it stores, so
	// that none depends on another starting first.
	// publisher.streams and a handler's create_stream declare streams the
	// same way; a stream written in more than one must read the same in
	// each. What is declared here wins: a change made to the stream by
	// other means (the nats CLI) is undone at the next start.
	Streams map[string]stream.Config `yaml:"streams"`
	// Publisher configures the buffered publisher.
	Publisher publisher.Config `yaml:"publisher"`
	// Requests configures the requests the Client makes (Client.Request):
	// whether one made while disconnected waits, and the default timeout.
	Requests RequestsConfig `yaml:"requests"`
	// Handlers configures message handlers by name. Code binds a function
	// to each name with Client.Handle or Client.HandleRequest; fields set
	// here override those declared in code.
	Handlers map[string]consumer.Config `yaml:"handlers"`
	// KV declares key-value buckets by name; code opens them with
	// Client.KV. Each is created, or updated to match, on first use.
	KV map[string]kv.Config `yaml:"kv"`
	// ObjectStores declares object stores by name; code opens them with
	// Client.ObjectStore.
	ObjectStores map[string]objectstore.Config `yaml:"object_stores"`
	// Tasks configures long-running task queues by name: the workers
	// declared with Client.HandleTasks, and the queues Client.Enqueue adds
	// tasks to. Fields set here override those declared in code.
	Tasks map[string]tasks.Config `yaml:"tasks"`
	// Locks declares distributed locks by name; code opens them with
	// Client.Lock. A lock's key defaults to its name. A lock's bucket holds
	// locks only: it must not be in KV, and the locks that share one have
	// one TTL.
	Locks map[string]kv.LockConfig `yaml:"locks"`
	// Watches configures the watches declared with Client.AddWatch.
	Watches WatchesConfig `yaml:"watches"`
	// Ops configures the operations endpoints: health, readiness,
	// metrics, status and the status page (see Client.OpsHandler).
	Ops OpsConfig `yaml:"ops"`
	// Discovery configures how the Client answers the fleet's requests
	// ($CORRAL.PING, $CORRAL.STATUS; package fleet).
	Discovery DiscoveryConfig `yaml:"discovery"`

	// keys are the fields the file and the environment set, so that a key
	// written as false or zero still overrides what code declared.
	keys conf.Keys
}

// WatchesConfig configures every watch declared in code.
type WatchesConfig struct {
	// Restart is each watch's restart policy; it inherits the top-level
	// one.
	Restart supervisor.Policy `yaml:"restart"`
}

// LoadConfig reads the YAML file at path (none if path is empty) as
// ParseConfig does, then applies the process's CORRAL_* environment
// variables with ApplyEnv; they win over the file. A mistake in the file
// is an error wrapping ErrConfigFile and ErrInvalidConfig that lists every
// one with its path and line. It does not validate the values: New does,
// reporting every problem at once.
func LoadConfig(path string) (Config, error) {
	var cfg Config
	if path != "" {
		data, err := os.ReadFile(path)
		if err != nil {
			return Config{}, fmt.Errorf("%w: %w", ErrConfigFile, err)
		}
		if cfg, err = ParseConfig(data); err != nil {
			return Config{}, fmt.Errorf("%w %s: %w", ErrConfigFile, path, err)
		}
	}
	if err := cfg.ApplyEnv(os.Environ()); err != nil {
		return Config{}, err
	}
	return cfg, nil
}

// ParseConfig decodes YAML. Durations read like "2s", sizes like "64MiB".
// Keys that match no field, keys written twice, values of the wrong type
// and YAML that does not parse are reported all at once in a
// *ValidationError (wrapping ErrInvalidConfig), each problem with its path
// and line: `handlers.fulfil.workers (line 26): want an integer, got
// "eight"`.
func ParseConfig(data []byte) (Config, error) {
	var cfg Config
	doc, err := conf.DecodeYAML(data, &cfg)
	if err != nil {
		return Config{}, err
	}
	cfg.keys = conf.KeysOf(doc)
	return cfg, nil
}

// ApplyEnv overrides fields from the variables of environ ("NAME=value",
// as os.Environ returns them; a later one wins) named EnvPrefix and the
// path of yaml keys to the field, upper-cased, with "_" for "." and "-":
// CORRAL_CONNECTION_PING_INTERVAL, CORRAL_HANDLERS_ORDERS_WORKERS. Values
// read as in YAML; lists are comma-separated, and an empty element (a,,b)
// is an error: a comma inside a server URL's credentials is written %2C.
// A variable reaches only the map entries c has (those the file
// declares): it never adds one. Every variable starting with EnvPrefix
// and "_" must name exactly one field;
// one that names none, or two (entries order_events and order-events),
// is an error, as is a bad value. A variable never unsets a field: an
// empty value (CORRAL_CONNECTION_SERVERS=), a list of no elements, and
// YAML's null (~, null) for a field that is not a string are errors
// naming the variable; to unset a field, change the file. A restart
// policy's variable sets its mode, as `restart: temporary` does in YAML:
// CORRAL_RESTART=temporary is CORRAL_RESTART_MODE=temporary. All
// mistakes are reported at once, wrapping ErrInvalidConfig, and c is
// changed only when there is none.
func (c *Config) ApplyEnv(environ []string) error {
	set, err := conf.ApplyEnv(c, EnvPrefix, environ)
	if c.keys == nil {
		c.keys = conf.Keys{}
	}
	c.keys.Add("", set)
	return err
}

// Validate reports every problem at once, each naming its field, in an
// error that wraps ErrInvalidConfig (a *ValidationError). New validates
// more: that a configuration with no servers has an embedded server to
// run (WithEmbeddedServer), and that ops.listen has a handler to serve
// (WithOps).
func (c Config) Validate() error { return c.validate(options{}, false) }

// validate is Validate, and with options, what only New can check: what
// the options must give the configuration.
func (c Config) validate(o options, withOptions bool) error {
	p := conf.NewProblems("")
	p.Merge("connection", c.Connection.Validate())
	switch {
	case c.keys["connection.servers"] && len(c.Connection.Servers) == 0:
		p.Addf("connection.servers", "written but empty: list a server, or remove the key to run the embedded server")
	case withOptions && len(c.Connection.Servers) == 0 && o.server == nil:
		p.Addf("connection.servers", noServerProblem)
	}
	if withOptions && c.Ops.Listen != "" && o.ops == nil {
		p.Addf("ops.listen", noOpsProblem)
	}
	if len(c.Connection.Servers) == 0 {
		p.Merge("server", c.Server.Validate())
	}
	p.Merge("jetstream", c.JetStreamAPI.Validate())
	p.Merge("restart", c.Restart.Validate())
	p.Merge("publisher", c.Publisher.Validate())
	p.Merge("requests", c.Requests.Validate())
	for _, name := range slices.Sorted(maps.Keys(c.Handlers)) {
		p.Merge("handlers."+name, c.Handlers[name].ValidateOverride())
	}
	for _, name := range slices.Sorted(maps.Keys(c.KV)) {
		if err := subject.ValidBucket(name); err != nil {
			p.Addf("kv", "bucket %v", err)
		}
		p.Merge("kv."+name, c.KV[name].Validate())
	}
	for _, name := range slices.Sorted(maps.Keys(c.ObjectStores)) {
		if err := subject.ValidBucket(name); err != nil {
			p.Addf("object_stores", "store %v", err)
		}
		p.Merge("object_stores."+name, c.ObjectStores[name].Validate())
	}
	for _, name := range slices.Sorted(maps.Keys(c.Tasks)) {
		p.Merge("tasks."+name, tasks.ValidateNames(name, c.Tasks[name]))
		p.Merge("tasks."+name, c.Tasks[name].Validate())
	}
	c.validateLocks(p)
	c.validateStreams(p)
	c.streamAPIs(p)
	p.Merge("watches.restart", c.Watches.Restart.Validate())
	p.Merge("ops", c.Ops.Validate())
	c.Discovery.validate(p, c.Name)
	c.validatePolicies(p)
	return p.Err()
}

// validatePolicies checks what only shows once a child's policy has
// inherited the top-level one and the defaults.
func (c Config) validatePolicies(p conf.Problems) {
	root := c.Restart.Inherit(supervisor.Defaults())
	if root.RestartDelay > root.Backoff {
		p.Addf("restart", "restart_delay %v is longer than backoff %v (with defaults)", root.RestartDelay, root.Backoff)
	}
	child := func(field string, own supervisor.Policy) supervisor.Policy {
		r := own.Inherit(root)
		if (own.RestartDelay != 0 || own.Backoff != 0) && r.RestartDelay > r.Backoff {
			p.Addf(field+".restart", "restart_delay %v is longer than backoff %v once inherited", r.RestartDelay, r.Backoff)
		}
		return r
	}
	child("connection", c.Connection.Restart)
	// Only the connection's own timeout is checked against its drain: an
	// inherited one is raised to it (see addConnection), since it was
	// written for every child, not for the connection.
	if own := c.Connection.Restart.ShutdownTimeout; own != 0 && own < c.Connection.MinShutdownTimeout() {
		p.Addf("connection.restart.shutdown_timeout", "%v leaves no time to drain: want at least %v (drain_timeout + 5s)",
			own, c.Connection.MinShutdownTimeout())
	}
	if len(c.Connection.Servers) == 0 {
		child("server", c.Server.Restart)
	}
	child("publisher", c.Publisher.Restart)
	for _, name := range slices.Sorted(maps.Keys(c.Handlers)) {
		child("handlers."+name, c.Handlers[name].Restart)
	}
	child("watches", c.Watches.Restart)
	child("ops", c.Ops.Restart)
	child("discovery", c.Discovery.Restart)
}

// validateLocks checks each lock, and that the locks sharing a bucket
// agree on its TTL and that no lock bucket is also a KV bucket.
func (c Config) validateLocks(p conf.Problems) {
	ttls := map[string]time.Duration{}
	for _, name := range slices.Sorted(maps.Keys(c.Locks)) {
		l := c.lock(name)
		p.Merge("locks."+name, l.Validate())
		if _, clash := c.KV[l.Bucket]; clash {
			p.Addf("locks."+name+".bucket", "%q is also declared under kv: a lock bucket holds locks only", l.Bucket)
		}
		ttl := l.TTL
		if ttl == 0 {
			ttl = kv.DefaultLockTTL
		}
		if other, ok := ttls[l.Bucket]; ok && other != ttl {
			p.Addf("locks."+name+".ttl", "%v differs from %v of another lock in bucket %q: locks sharing a bucket share its TTL", ttl, other, l.Bucket)
		}
		ttls[l.Bucket] = ttl
	}
}

// lock is the configuration of the lock name, its key defaulting to name.
func (c Config) lock(name string) kv.LockConfig {
	l := c.Locks[name]
	if l.Key == "" {
		l.Key = name
	}
	return l
}
