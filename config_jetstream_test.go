package corral_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/corral-go/corral"
	"github.com/corral-go/corral/connection"
	"github.com/corral-go/corral/consumer"
	"github.com/corral-go/corral/tasks"
)

// The JetStream a Client reaches is read from the file and from
// CORRAL_JETSTREAM_DOMAIN, and a handler, queue, bucket, store and lock
// may each name its own.
func TestJetStreamDomainFromFileAndEnvironment(t *testing.T) {
	t.Parallel()
	cfg, err := envConfig(t, `
jetstream: {domain: edge}
handlers:
  fulfil: {subject: orders.new, stream: ORDERS, jetstream: {api_prefix: JS.orders.API}}
tasks:
  render: {jetstream: {domain: leaf}}
kv:
  settings: {jetstream: {domain: leaf}}
`, "CORRAL_JETSTREAM_DOMAIN=hub")
	if err != nil {
		t.Fatal(err)
	}
	if cfg.JetStreamAPI != (connection.JetStreamAPI{Domain: "hub"}) {
		t.Errorf("jetstream: %+v, want the environment's domain hub", cfg.JetStreamAPI)
	}
	if got := cfg.Handlers["fulfil"].JetStreamAPI; got.APIPrefix != "JS.orders.API" {
		t.Errorf("handlers.fulfil.jetstream: %+v", got)
	}
	if got := cfg.Tasks["render"].JetStreamAPI.Domain; got != "leaf" {
		t.Errorf("tasks.render.jetstream.domain: %q", got)
	}
	if got := cfg.KV["settings"].JetStreamAPI.Domain; got != "leaf" {
		t.Errorf("kv.settings.jetstream.domain: %q", got)
	}
	if err := cfg.Validate(); err != nil {
		t.Errorf("Validate: %v", err)
	}
}

// A domain or prefix that could not address a JetStream, or both at once,
// is refused at New, naming the field.
func TestJetStreamAPIRefusedAtNew(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		api        connection.JetStreamAPI
		field, why string
	}{
		{connection.JetStreamAPI{Domain: "hub", APIPrefix: "JS.x.API"}, "jetstream.domain", "both set"},
		{connection.JetStreamAPI{Domain: "hub.east"}, "jetstream.domain", "one subject token"},
		{connection.JetStreamAPI{Domain: "hub*"}, "jetstream.domain", "one subject token"},
		{connection.JetStreamAPI{Domain: "ACK"}, "jetstream.domain", "reserved"},
		{connection.JetStreamAPI{Domain: "$G"}, "jetstream.domain", "'$'"},
		{connection.JetStreamAPI{APIPrefix: "JS.>"}, "jetstream.api_prefix", "wildcard"},
		{connection.JetStreamAPI{APIPrefix: "JS..API"}, "jetstream.api_prefix", "empty"},
	} {
		cfg := corral.Config{JetStreamAPI: tc.api}
		cfg.Connection.Servers = []string{"nats://127.0.0.1:4222"}
		_, err := corral.New(cfg)
		if !errors.Is(err, corral.ErrInvalidConfig) || !strings.Contains(err.Error(), tc.field) || !strings.Contains(err.Error(), tc.why) {
			t.Errorf("%+v: %v, want ErrInvalidConfig naming %s and saying %q", tc.api, err, tc.field, tc.why)
		}
	}
}

// A stream is declared in one JetStream: a handler and a task queue, or
// two handlers, that would declare one stream in two are refused, and
// so is a handler declared in code whose stream the configuration keeps
// in another JetStream.
func TestOneStreamInOneJetStream(t *testing.T) {
	t.Parallel()
	cfg, err := corral.ParseConfig([]byte(`
jetstream: {domain: hub}
streams:
  ORDERS: {subjects: [orders.>]}
handlers:
  fulfil: {subject: orders.new, stream: ORDERS}
  audit: {subject: orders.new, stream: ORDERS, jetstream: {domain: leaf}}
`))
	if err != nil {
		t.Fatal(err)
	}
	err = cfg.Validate()
	if !errors.Is(err, corral.ErrInvalidConfig) || !strings.Contains(err.Error(), "handlers.") || !strings.Contains(err.Error(), "stream ORDERS") {
		t.Fatalf("two handlers of ORDERS in two domains: %v", err)
	}

	cfg, err = corral.ParseConfig([]byte(`
jetstream: {domain: hub}
streams:
  ORDERS: {subjects: [orders.>]}
tasks:
  render: {}
`))
	if err != nil {
		t.Fatal(err)
	}
	cfg.Connection.Servers = []string{"nats://127.0.0.1:4222"}
	c, err := corral.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	hc := consumer.Config{Subject: "orders.new", JetStream: consumer.JetStream{Stream: "ORDERS",
		JetStreamAPI: connection.JetStreamAPI{Domain: "leaf"}}}
	err = c.Handle("audit", hc, consumer.HandlerFunc(nil))
	if !errors.Is(err, corral.ErrInvalidConfig) || !strings.Contains(err.Error(), "handlers.audit.jetstream") || !strings.Contains(err.Error(), "domain hub") {
		t.Errorf("a handler in code in another domain than its stream: %v", err)
	}
	err = c.HandleTasks("render", tasks.Config{JetStreamAPI: connection.JetStreamAPI{Domain: "leaf"}}, tasks.HandlerFunc(nil))
	if !errors.Is(err, corral.ErrInvalidConfig) || !strings.Contains(err.Error(), "tasks.render.jetstream") {
		t.Errorf("a worker in code in another domain than its queue's stream: %v", err)
	}
}
