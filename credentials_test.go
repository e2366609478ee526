package corral_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"

	"github.com/corral-go/corral"
	"github.com/corral-go/corral/connection"
	"github.com/corral-go/corral/internal/natstest"
)

// A Client given a wrong password holding a comma prints neither the
// password nor the part before its comma: not in its logs, its events,
// its status or the error Run returns.
func TestWrongPasswordWithACommaNeverPrinted(t *testing.T) {
	t.Parallel()
	const password = "HeadZ9k,TailZ9k"
	secrets := []string{password, "HeadZ9k", "TailZ9k"}
	srv := natstest.RunServer(t, natstest.WithUser("alice", "right"), natstest.WithoutJetStream())
	cfg := corral.Config{Name: "creds"}
	cfg.Connection.Servers = []string{fmt.Sprintf("nats://alice:%s@127.0.0.1:%d", password, srv.Port())}
	c, logs, rec := observedClient(t, cfg, embeddedServer)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- c.Run(ctx) }()
	natstest.Eventually(t, 10*time.Second, func() bool { return c.Status().Connection.LastError != "" },
		func() string { return "the connection reports no error:\n" + c.Status().String() })
	outputs := []string{c.Status().String(), fmt.Sprintf("%+v", c.Status())}
	cancel()
	runErr := <-done
	if runErr != nil {
		outputs = append(outputs, runErr.Error(), fmt.Sprintf("%+v", runErr))
	}
	assertNonePrinted(t, secrets, outputs, logs, rec)
}

// observedClient is a Client of cfg whose log lines and events are kept.
func observedClient(t *testing.T, cfg corral.Config, opts ...corral.Option) (*corral.Client, *observer.ObservedLogs, *natstest.Recorder) {
	t.Helper()
	core, logs := observer.New(zap.DebugLevel)
	rec := natstest.NewRecorder()
	c, err := corral.New(cfg, append(opts, corral.WithLogger(zap.New(core)), corral.WithEventHook(rec.Hook))...)
	if err != nil {
		t.Fatal(err)
	}
	return c, logs, rec
}

// assertNonePrinted fails t for each secret in outputs, in a log line or
// in an event, of which there must be some.
func assertNonePrinted(t *testing.T, secrets, outputs []string, logs *observer.ObservedLogs, rec *natstest.Recorder) {
	t.Helper()
	for _, e := range logs.All() {
		outputs = append(outputs, fmt.Sprintf("%s %+v", e.Message, e.ContextMap()))
	}
	for _, ev := range rec.Events() {
		outputs = append(outputs, fmt.Sprintf("%v", ev), fmt.Sprintf("%+v", ev))
	}
	if logs.Len() == 0 || len(rec.Events()) == 0 {
		t.Errorf("got %d log lines and %d events, want some of each", logs.Len(), len(rec.Events()))
	}
	for _, out := range outputs {
		for _, s := range secrets {
			if strings.Contains(out, s) {
				t.Errorf("%q is printed:\n%s", s, out)
			}
		}
	}
}

// A password with a comma, given in CORRAL_CONNECTION_SERVERS: written
// as it is, the variable cuts it in two and New refuses the pieces
// without showing either, saying to write the comma as %2C; written so,
// the Client connects with the right password and prints none of it.
func TestCommaInAPasswordOfTheEnvironment(t *testing.T) {
	t.Parallel()
	srv := natstest.RunServer(t, natstest.WithUser("alice", "S3cr3t,Tail"))
	secrets := []string{"S3cr3t", "Tail"}
	plain := fmt.Sprintf("CORRAL_CONNECTION_SERVERS=nats://alice:S3cr3t,Tail@127.0.0.1:%d", srv.Port())
	encoded := fmt.Sprintf("CORRAL_CONNECTION_SERVERS=nats://alice:S3cr3t%%2CTail@127.0.0.1:%d", srv.Port())

	var cfg corral.Config
	if err := cfg.ApplyEnv([]string{plain}); err != nil {
		t.Fatal(err)
	}
	_, err := corral.New(cfg)
	if !errors.Is(err, corral.ErrInvalidConfig) || !strings.Contains(err.Error(), "%2C") {
		t.Fatalf("got %v, want ErrInvalidConfig saying to write the comma as %%2C", err)
	}
	outputs := []string{err.Error()}

	cfg = corral.Config{Name: "encoded"}
	if err := cfg.ApplyEnv([]string{encoded}); err != nil {
		t.Fatal(err)
	}
	c, logs, rec := observedClient(t, cfg)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- c.Run(ctx) }()
	nc, err := c.Conn(ctx)
	if err != nil {
		t.Fatalf("Conn: %v (the password reached the server wrong?)\n%s", err, c.Status())
	}
	if _, err := nc.RTT(); err != nil {
		t.Fatalf("RTT: %v", err)
	}
	outputs = append(outputs, c.Status().String(), fmt.Sprintf("%+v", c.Status()), fmt.Sprintf("%+v", cfg))
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("Run: %v", err)
	}
	assertNonePrinted(t, secrets, outputs, logs, rec)
}

// Printing a Config with any verb shows none of its credentials.
func TestConfigPrintsNoCredentials(t *testing.T) {
	t.Parallel()
	secrets := []string{"UrlPa", "ssW0rd", "authTok3n"}
	cfg := corral.Config{Name: "creds"}
	cfg.Connection.Servers = []string{"nats://alice:UrlPa,ssW0rd@127.0.0.1:4222"}
	cfg.Connection.Auth = connection.AuthConfig{Token: "authTok3n"}
	for _, verb := range []string{"%v", "%+v", "%#v", "%s"} {
		for _, v := range []any{cfg, &cfg} {
			out := fmt.Sprintf(verb, v)
			for _, s := range secrets {
				if strings.Contains(out, s) {
					t.Errorf("%s of %T prints %q:\n%s", verb, v, s, out)
				}
			}
		}
	}
}
