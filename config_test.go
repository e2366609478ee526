package corral_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/corral-go/corral"
	"github.com/corral-go/corral/supervisor"
)

func TestLoadConfig(t *testing.T) {
	path := filepath.Join(t.TempDir(), "corral.yaml")
	data := `
name: billing
connection:
  servers: [nats://127.0.0.1:4222, nats://127.0.0.1:4223]
  reconnect_wait: 2s
  reconnect_buf_size: 16MiB
  restart: {backoff: 5s}
server:
  store_dir: /tmp/corral
restart: {failure_threshold: 3, failure_decay: 10s, backoff: 15s}
`
	if err := os.WriteFile(path, []byte(data), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, err := corral.LoadConfig(path)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Name != "billing" || len(cfg.Connection.Servers) != 2 || cfg.Connection.ReconnectWait != 2*time.Second ||
		cfg.Connection.ReconnectBufSize != 16<<20 || cfg.Connection.Restart.Backoff != 5*time.Second ||
		cfg.Server.StoreDir != "/tmp/corral" || cfg.Restart.FailureThreshold != 3 || cfg.Restart.FailureDecay != 10*time.Second {
		t.Fatalf("got %+v", cfg)
	}
	if err := cfg.Validate(); err != nil {
		t.Fatalf("valid file: %v", err)
	}
}

func TestConfigRejectsUnknownKeys(t *testing.T) {
	for _, doc := range []string{
		"connection: {servers: [nats://127.0.0.1:4222], ping_intervall: 5s}",
		"restart: {mode: permanent, max_restarts: 3}",
		"consumer: {}",
	} {
		if _, err := corral.ParseConfig([]byte(doc)); err == nil {
			t.Errorf("%q: accepted, want an unknown-key error", doc)
		}
	}
}

func TestEnvironmentOverridesFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "corral.yaml")
	if err := os.WriteFile(path, []byte("connection:\n  servers: [nats://file:4222]\n  ping_interval: 5s\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("CORRAL_CONNECTION_SERVERS", "nats://env-a:4222, nats://env-b:4222")
	t.Setenv("CORRAL_CONNECTION_PING_INTERVAL", "750ms")
	t.Setenv("CORRAL_CONNECTION_RECONNECT_BUF_SIZE", "1MiB")
	t.Setenv("CORRAL_CONNECTION_RETRY_ON_FAILED_CONNECT", "false")
	t.Setenv("CORRAL_RESTART_MODE", "transient")
	cfg, err := corral.LoadConfig(path)
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(cfg.Connection.Servers, ","); got != "nats://env-a:4222,nats://env-b:4222" {
		t.Errorf("servers: got %s", got)
	}
	if cfg.Connection.PingInterval != 750*time.Millisecond {
		t.Errorf("ping_interval: got %v", cfg.Connection.PingInterval)
	}
	if cfg.Connection.ReconnectBufSize != 1<<20 {
		t.Errorf("reconnect_buf_size: got %d", cfg.Connection.ReconnectBufSize)
	}
	if r := cfg.Connection.RetryOnFailedConnect; r == nil || *r {
		t.Errorf("retry_on_failed_connect: got %v, want false", r)
	}
	if cfg.Restart.Mode != supervisor.Transient {
		t.Errorf("restart.mode: got %q", cfg.Restart.Mode)
	}
}

func TestEnvironmentBadValuesNameTheVariable(t *testing.T) {
	t.Setenv("CORRAL_CONNECTION_PING_INTERVAL", "soon")
	t.Setenv("CORRAL_SERVER_PORT", "eighty")
	_, err := corral.LoadConfig("")
	if !errors.Is(err, corral.ErrInvalidConfig) {
		t.Fatalf("got %v, want ErrInvalidConfig", err)
	}
	for _, name := range []string{"CORRAL_CONNECTION_PING_INTERVAL", "CORRAL_SERVER_PORT"} {
		if !strings.Contains(err.Error(), name) {
			t.Errorf("error %q does not name %s", err, name)
		}
	}
}

func TestValidateReportsEveryMistake(t *testing.T) {
	cfg := corral.Config{}
	cfg.Connection.Servers = []string{"http://127.0.0.1:4222", "nats://user:hunter2@:4222"}
	cfg.Connection.PingInterval = -time.Second
	cfg.Connection.MaxPingsOutstanding = -1
	cfg.Connection.Auth.Token = "t0ken"
	cfg.Connection.Auth.User = "app"
	cfg.Connection.TLS.CertFile = "/no/such/cert.pem"
	cfg.Connection.Restart.Mode = "always"
	cfg.Restart.FailureThreshold = -2

	_, err := corral.New(cfg, embeddedServer)
	if !errors.Is(err, corral.ErrInvalidConfig) {
		t.Fatalf("got %v, want ErrInvalidConfig", err)
	}
	var ve *corral.ValidationError
	if !errors.As(err, &ve) {
		t.Fatalf("got %T, want *corral.ValidationError", err)
	}
	wantFields := []string{
		"connection.servers[0]", "connection.servers[1]", "connection.ping_interval",
		"connection.max_pings_outstanding", "connection.tls", "connection.tls.cert_file", "connection.auth",
		"connection.restart.mode", "restart.failure_threshold",
	}
	got := map[string]bool{}
	for _, p := range ve.Problems {
		got[p.Field] = true
	}
	for _, f := range wantFields {
		if !got[f] {
			t.Errorf("no problem reported for %s; got %v", f, ve.Problems)
		}
	}
	if strings.Contains(err.Error(), "hunter2") || strings.Contains(err.Error(), "t0ken") {
		t.Errorf("error reveals a secret: %v", err)
	}
}

func TestZeroConfigIsValid(t *testing.T) {
	if err := (corral.Config{}).Validate(); err != nil {
		t.Fatal(err)
	}
}

// A configuration with no servers needs an embedded server to run: New
// refuses it without one, saying both ways out, and accepts it with one.
// Servers configured need no embedded server.
func TestNewRefusesNoServerAndNoEmbeddedServer(t *testing.T) {
	t.Parallel()
	_, err := corral.New(corral.Config{})
	var ve *corral.ValidationError
	if !errors.Is(err, corral.ErrInvalidConfig) || !errors.As(err, &ve) {
		t.Fatalf("New with no servers and no embedded server: got %v, want a *corral.ValidationError", err)
	}
	if len(ve.Problems) != 1 || ve.Problems[0].Field != "connection.servers" {
		t.Fatalf("problems: got %v, want one, of connection.servers", ve.Problems)
	}
	for _, want := range []string{"list the servers", "corral.WithEmbeddedServer(embedded.New)", "github.com/corral-go/corral/embedded"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not say %q", err, want)
		}
	}

	c, err := corral.New(corral.Config{Server: corral.ServerConfig{StoreDir: t.TempDir()}}, embeddedServer)
	if err != nil {
		t.Fatalf("New with the embedded server: %v", err)
	}
	_ = c.Close()
	var remote corral.Config
	remote.Connection.Servers = []string{"nats://127.0.0.1:4222"}
	c, err = corral.New(remote)
	if err != nil {
		t.Fatalf("New with servers and no embedded server: %v", err)
	}
	_ = c.Close()
}

func writeFile(path, data string) error { return os.WriteFile(path, []byte(data), 0o600) }

// A shutdown timeout the connection inherits from the top-level policy
// never makes it invalid: the connection takes the longer of it and the
// time it needs to drain. Only its own too short a timeout is refused.
func TestConnectionShutdownTimeoutInherited(t *testing.T) {
	t.Parallel()
	tests := []struct {
		yaml string
		want time.Duration // the connection's; 0: refused
	}{
		{"restart: {shutdown_timeout: 10s}", 15 * time.Second},
		{"restart: {shutdown_timeout: 30s}", 30 * time.Second},
		{"restart: {shutdown_timeout: 10s}\nconnection: {drain_timeout: 20s}", 25 * time.Second},
		{"restart: {shutdown_timeout: 30s}\nconnection: {restart: {shutdown_timeout: 10s}}", 0},
		{"connection: {restart: {shutdown_timeout: 14s}}", 0},
	}
	for _, tt := range tests {
		cfg, err := corral.ParseConfig([]byte(tt.yaml))
		if err != nil {
			t.Fatalf("%q: %v", tt.yaml, err)
		}
		c, err := corral.New(cfg, embeddedServer)
		if tt.want == 0 {
			if !errors.Is(err, corral.ErrInvalidConfig) || !strings.Contains(err.Error(), "connection.restart.shutdown_timeout") {
				t.Errorf("%q: got %v, want connection.restart.shutdown_timeout refused", tt.yaml, err)
			}
			continue
		}
		if err != nil {
			t.Errorf("%q: %v", tt.yaml, err)
			continue
		}
		for _, ch := range c.Status().Children {
			if ch.Name == "connection" && ch.Policy.ShutdownTimeout != tt.want {
				t.Errorf("%q: connection shutdown_timeout got %v, want %v", tt.yaml, ch.Policy.ShutdownTimeout, tt.want)
			}
		}
		if err := c.Close(); err != nil {
			t.Error(err)
		}
	}
}
