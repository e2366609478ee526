package connection_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap/zaptest/observer"

	"github.com/corral-go/corral/connection"
	"github.com/corral-go/corral/internal/natstest"
	"github.com/corral-go/corral/supervisor"
)

// A password holding a comma once reached nats.go inside a comma-joined
// server list, which cut the URL in two: the client never connected.
func TestPasswordWithACommaConnects(t *testing.T) {
	t.Parallel()
	const password = "Pa,ssW0rd"
	srv := natstest.RunServer(t, natstest.WithUser("alice", password), natstest.WithoutJetStream())
	url := fmt.Sprintf("nats://alice:%s@127.0.0.1:%d", password, srv.Port())
	h := newHarness(t, connection.Config{Servers: []string{url}})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	nc, _, err := h.sup.Conn(ctx)
	if err != nil {
		t.Fatalf("Conn: got %v, want a connection (status %+v)", err, h.sup.Status())
	}
	if _, err := nc.RTT(); err != nil {
		t.Fatalf("RTT: %v", err)
	}
	if st := h.sup.Status(); strings.Contains(st.URL, "Pa") {
		t.Errorf("Status.URL: got %q, want the password redacted", st.URL)
	}
	h.shutdown()
}

// With a wrong password holding a comma, neither the password nor the
// part before its comma reaches a log line, an event, the status or the
// error Serve returns.
func TestPasswordWithACommaNeverPrinted(t *testing.T) {
	t.Parallel()
	const password = "HeadQ7x,TailQ7x"
	secrets := []string{password, "HeadQ7x", "TailQ7x"}
	srv := natstest.RunServer(t, natstest.WithUser("alice", "right"), natstest.WithoutJetStream())
	url := fmt.Sprintf("nats://alice:%s@127.0.0.1:%d", password, srv.Port())

	var outputs []string
	check := func(t *testing.T, logs *observer.ObservedLogs, rec *natstest.Recorder, more ...string) {
		t.Helper()
		outputs = append(outputs[:0], more...)
		for _, e := range logs.All() {
			outputs = append(outputs, fmt.Sprintf("%s %+v", e.Message, e.ContextMap()))
		}
		for _, ev := range rec.Events() {
			outputs = append(outputs, fmt.Sprintf("%v", ev), fmt.Sprintf("%+v", ev), stringify(ev))
		}
		if len(logs.All()) == 0 || len(rec.Events()) == 0 {
			t.Errorf("got %d log lines and %d events, want some of each", len(logs.All()), len(rec.Events()))
		}
		for _, out := range outputs {
			for _, s := range secrets {
				if strings.Contains(out, s) {
					t.Errorf("%q is printed:\n%s", s, out)
				}
			}
		}
	}

	t.Run("first connect", func(t *testing.T) {
		// Serve's own error, as a tree or Run receives it.
		retry := false
		sup, err := connection.New(connection.Config{Servers: []string{url}, RetryOnFailedConnect: &retry})
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		serveErr := sup.Serve(ctx)
		if serveErr == nil || ctx.Err() != nil {
			t.Fatalf("Serve: got %v, want the connect error before ctx ends", serveErr)
		}
		// The same failure in a tree, which logs it and emits events.
		h := newHarness(t, connection.Config{Servers: []string{url}, RetryOnFailedConnect: &retry})
		natstest.WaitFor(t, h.rec, 0, 10*time.Second, func(e supervisor.ChildFailed) bool { return e.Child == "connection" })
		st := h.sup.Status()
		if st.LastError == "" {
			t.Errorf("Status.LastError is empty, want the error")
		}
		h.shutdown()
		check(t, h.logs, h.rec, serveErr.Error(), fmt.Sprintf("%+v", serveErr), fmt.Sprintf("%+v", st))
	})

	t.Run("reconnecting", func(t *testing.T) {
		h := newHarness(t, connection.Config{Servers: []string{url}, ReconnectWait: 10 * time.Millisecond, ReconnectJitter: time.Millisecond})
		natstest.Eventually(t, 10*time.Second, func() bool { return h.sup.Status().LastError != "" },
			func() string { return fmt.Sprintf("no error in the status: %+v", h.sup.Status()) })
		st := h.sup.Status()
		h.shutdown()
		check(t, h.logs, h.rec, fmt.Sprintf("%+v", st))
	})
}

// No verb prints a Config's credentials.
func TestConfigPrintsNoCredentials(t *testing.T) {
	t.Parallel()
	secrets := []string{"UrlPa", "ssW0rd", "urlTok3n", "authTok3n", "authPassw0rd"}
	for _, cfg := range []connection.Config{
		{Servers: []string{"nats://alice:UrlPa,ssW0rd@127.0.0.1:4222", "nats://urlTok3n@127.0.0.1:4223"},
			Auth: connection.AuthConfig{Token: "authTok3n"}},
		{Servers: []string{"nats://alice:UrlPa%2CssW0rd@127.0.0.1:4222"},
			Auth: connection.AuthConfig{User: "bob", Password: "authPassw0rd"}},
	} {
		for _, verb := range []string{"%v", "%+v", "%#v", "%s", "%q", "%x", "%d"} {
			for _, v := range []any{cfg, &cfg, cfg.Auth, struct{ C connection.Config }{cfg}} {
				out := fmt.Sprintf(verb, v)
				for _, s := range secrets {
					if strings.Contains(out, s) {
						t.Errorf("%s of %T prints %q:\n%s", verb, v, s, out)
					}
				}
			}
		}
	}
}
