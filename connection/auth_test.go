package connection_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/corral-go/corral/connection"
	"github.com/corral-go/corral/internal/natstest"
	"github.com/corral-go/corral/supervisor"
)

func TestAuthMethods(t *testing.T) {
	t.Parallel()
	nkeyOpt, seedFile := natstest.NKeyUser(t)
	credsOpt, credsFile := natstest.CredsUser(t)
	tests := []struct {
		name string
		opt  natstest.Option
		auth connection.AuthConfig
	}{
		{"token", natstest.WithToken("s3cret-token"), connection.AuthConfig{Token: "s3cret-token"}},
		{"user and password", natstest.WithUser("app", "pw"), connection.AuthConfig{User: "app", Password: "pw"}},
		{"nkey seed file", nkeyOpt, connection.AuthConfig{NKeySeedFile: seedFile}},
		{"credentials file", credsOpt, connection.AuthConfig{CredsFile: credsFile}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			srv := natstest.RunServer(t, tt.opt)
			h := newHarness(t, connection.Config{Servers: []string{srv.URL()}, Auth: tt.auth})
			ci := h.conn()
			if _, err := ci.nc.RTT(); err != nil {
				t.Fatal(err)
			}
			h.shutdown()
		})
	}
}

func TestTLS(t *testing.T) {
	t.Parallel()
	files := natstest.NewTLSFiles(t)
	srv := natstest.RunServer(t, natstest.WithTLS(t, files, true))
	url := "tls://" + strings.TrimPrefix(srv.URL(), "nats://")

	t.Run("CA, client certificate and server name", func(t *testing.T) {
		t.Parallel()
		h := newHarness(t, connection.Config{Servers: []string{url}, TLS: connection.TLSConfig{
			CAFile: files.CAFile, CertFile: files.ClientCert, KeyFile: files.ClientKey, ServerName: files.ServerName,
		}})
		ci := h.conn()
		if _, err := ci.nc.TLSConnectionState(); err != nil {
			t.Fatalf("not a TLS connection: %v", err)
		}
		h.shutdown()
	})
	t.Run("wrong server name", func(t *testing.T) {
		t.Parallel()
		// The certificate names natstest.local, not 127.0.0.1.
		h := newHarness(t, connection.Config{Servers: []string{url}, RetryOnFailedConnect: new(false), TLS: connection.TLSConfig{
			CAFile: files.CAFile, CertFile: files.ClientCert, KeyFile: files.ClientKey,
		}})
		ev, _ := natstest.WaitFor[supervisor.ChildFailed](t, h.rec, 0, 10*time.Second, nil)
		if !strings.Contains(ev.Err.Error(), "certificate") {
			t.Fatalf("got %v, want a certificate error", ev.Err)
		}
		h.shutdown()
	})
	t.Run("no client certificate", func(t *testing.T) {
		t.Parallel()
		h := newHarness(t, connection.Config{Servers: []string{url}, RetryOnFailedConnect: new(false), TLS: connection.TLSConfig{
			CAFile: files.CAFile, ServerName: files.ServerName,
		}})
		natstest.WaitFor[supervisor.ChildFailed](t, h.rec, 0, 10*time.Second, nil)
		h.shutdown()
	})
}

func TestValidateNamesEveryField(t *testing.T) {
	cfg := connection.Config{
		Servers:             []string{"nats://127.0.0.1:4222/path", "nats://u:pa/ss@127.0.0.1:4222", "127.0.0.1:4222"},
		ReconnectWait:       5 * time.Second,
		MaxReconnectWait:    time.Second,
		MaxPingsOutstanding: -1,
		ReconnectBufSize:    -2,
		TLS:                 connection.TLSConfig{CertFile: "/nonexistent/cert.pem"},
		Auth:                connection.AuthConfig{Token: "t", CredsFile: "/nonexistent/user.creds", Password: "p"},
	}
	err := cfg.Validate()
	if !errors.Is(err, supervisor.ErrInvalidConfig) {
		t.Fatalf("got %v", err)
	}
	for _, want := range []string{
		"servers[0]", "servers[1]", "servers[2]", "max_reconnect_wait", "max_pings_outstanding",
		"reconnect_buf_size", "tls: cert_file and key_file", "tls.cert_file", "auth: set only one", "auth.user", "auth.creds_file",
	} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error does not mention %q: %v", want, err)
		}
	}
	if strings.Contains(err.Error(), "pa/ss") {
		t.Errorf("error reveals the password: %v", err)
	}
}

func TestRedact(t *testing.T) {
	tests := []struct{ in, want string }{
		{"nats://127.0.0.1:4222", "nats://127.0.0.1:4222"},
		{"nats://app:hunter2@127.0.0.1:4222", "nats://app:redacted@127.0.0.1:4222"},
		{"nats://s3cret-token@127.0.0.1:4222", "nats://redacted@127.0.0.1:4222"},
		{"nats://u:12/secret@127.0.0.1:4222", "nats://u:redacted@127.0.0.1:4222"},
		{"nats://u:1?secret@127.0.0.1:4222", "nats://u:redacted@127.0.0.1:4222"},
		{"nats://a/b:c@127.0.0.1:4222", "nats://redacted@127.0.0.1:4222"},
		{"u:p@127.0.0.1:4222", "u:redacted@127.0.0.1:4222"},
	}
	for _, tt := range tests {
		if got := connection.Redact(tt.in); got != tt.want {
			t.Errorf("Redact(%q): got %q, want %q", tt.in, got, tt.want)
		}
	}
	a := connection.AuthConfig{User: "app", Password: "hunter2"}
	if s := a.String(); strings.Contains(s, "hunter2") {
		t.Errorf("AuthConfig.String reveals the password: %s", s)
	}
}
