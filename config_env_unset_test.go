package corral_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/corral-go/corral"
	"github.com/corral-go/corral/supervisor"
)

const productionDoc = `
connection: {servers: [nats://nats-1.example:4222], ping_interval: 3s}
restart: {backoff: 3s}
handlers:
  fulfil: {subject: orders.paid, workers: 2}
`

// An empty or null variable is an error naming it, never a reset to the
// default: an empty CORRAL_CONNECTION_SERVERS used to drop the file's
// servers, and the Client ran the embedded server with local storage.
func TestEnvironmentNeverUnsetsAField(t *testing.T) {
	t.Parallel()
	for _, env := range []string{
		"CORRAL_CONNECTION_SERVERS=", "CORRAL_CONNECTION_SERVERS= , ", "CORRAL_CONNECTION_PING_INTERVAL=~",
		"CORRAL_RESTART_BACKOFF=null", "CORRAL_RESTART_JITTER=~", "CORRAL_HANDLERS_FULFIL_WORKERS=~",
		"CORRAL_HANDLERS_FULFIL_WORKERS=", "CORRAL_NAME=",
	} {
		name, _, _ := strings.Cut(env, "=")
		cfg, err := envConfig(t, productionDoc, env)
		if !errors.Is(err, corral.ErrInvalidConfig) || !strings.Contains(err.Error(), name) ||
			!strings.Contains(err.Error(), "set it to a value, or unset it") {
			t.Errorf("%s: got %v, want an error naming %s that says to set or unset it", env, err, name)
		}
		if got := cfg.Connection.Servers; len(got) != 1 || cfg.Connection.PingInterval != 3*time.Second ||
			cfg.Restart.Backoff != 3*time.Second || cfg.Handlers["fulfil"].Workers != 2 {
			t.Errorf("%s: the file's values changed: %+v", env, cfg)
		}
	}
}

// A string field takes the variable's text as it is: ~ is a name, not null.
func TestEnvironmentStringTakesTildeLiterally(t *testing.T) {
	t.Parallel()
	cfg, err := envConfig(t, productionDoc, "CORRAL_NAME=~")
	if err != nil || cfg.Name != "~" {
		t.Fatalf("got %q, %v; want the name ~", cfg.Name, err)
	}
}

// A servers key written but left empty (a template that rendered
// nothing) is refused rather than run as the embedded server.
func TestEmptyServersKeyIsRefused(t *testing.T) {
	t.Parallel()
	for _, doc := range []string{"connection: {servers: []}\n", "connection:\n  servers:\n", "connection: {servers: ~}\n"} {
		cfg, err := corral.ParseConfig([]byte(doc))
		if err != nil {
			t.Fatalf("%q: %v", doc, err)
		}
		err = cfg.Validate()
		if !errors.Is(err, corral.ErrInvalidConfig) || !strings.Contains(err.Error(), "connection.servers") {
			t.Errorf("%q: got %v, want an error naming connection.servers", doc, err)
		}
	}
	// With no servers key, the embedded server is meant, and valid.
	if err := (corral.Config{}).Validate(); err != nil {
		t.Errorf("zero Config: %v", err)
	}
}

// CORRAL_RESTART=temporary sets the mode, as `restart: temporary` does in
// the file, and keeps the policy's other fields; it used to be refused as
// naming no field. Setting it and CORRAL_RESTART_MODE both is an error.
func TestEnvironmentRestartShorthandSetsTheMode(t *testing.T) {
	t.Parallel()
	cfg, err := envConfig(t, productionDoc, "CORRAL_RESTART=temporary", "CORRAL_HANDLERS_FULFIL_RESTART=transient")
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Restart.Mode != supervisor.Temporary || cfg.Restart.Backoff != 3*time.Second {
		t.Errorf("restart: got %v, want temporary with the file's backoff 3s", cfg.Restart)
	}
	if got := cfg.Handlers["fulfil"].Restart.Mode; got != supervisor.Transient {
		t.Errorf("handlers.fulfil.restart.mode: got %q, want transient", got)
	}
	_, err = envConfig(t, productionDoc, "CORRAL_RESTART=temporary", "CORRAL_RESTART_MODE=permanent")
	if !errors.Is(err, corral.ErrInvalidConfig) || !strings.Contains(err.Error(), "CORRAL_RESTART_MODE") {
		t.Errorf("both set: got %v, want an error naming both", err)
	}
	cfg, err = envConfig(t, productionDoc, "CORRAL_RESTART=sometimes")
	if err == nil {
		err = cfg.Validate()
	}
	if !errors.Is(err, corral.ErrInvalidConfig) || !strings.Contains(err.Error(), "restart.mode") {
		t.Errorf("CORRAL_RESTART=sometimes: got %v, want an error naming restart.mode", err)
	}
}

// An empty element in a list variable is an error naming it, where it was
// dropped: CORRAL_CONNECTION_SERVERS=a,,b read as two servers.
func TestEnvironmentRefusesAnEmptyListElement(t *testing.T) {
	t.Parallel()
	cfg, err := envConfig(t, productionDoc, "CORRAL_CONNECTION_SERVERS=nats://a.example:4222,,nats://b.example:4222")
	if !errors.Is(err, corral.ErrInvalidConfig) ||
		!strings.Contains(err.Error(), "environment CORRAL_CONNECTION_SERVERS: element 2 of 3 is empty") {
		t.Fatalf("got %v, want an error naming the variable and its empty element", err)
	}
	if got := cfg.Connection.Servers; len(got) != 1 || got[0] != "nats://nats-1.example:4222" {
		t.Fatalf("the file's servers changed: %v", got)
	}
}
