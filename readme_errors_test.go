package corral_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/corral-go/corral"
)

// The errors the README quotes are the ones the code gives for what the
// README describes, word for word.
func TestREADMEErrorsAreTheCodes(t *testing.T) {
	t.Parallel()
	readme, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	file := filepath.Join(dir, "corral.yaml")
	if err := os.WriteFile(file, []byte("# line 1\nhandlers:\n  order_events: {subject: a}\n  fulfil:\n    workers: \"eight\"\n  order-events: {subject: b}\nrestart:\n  restart_dely: 1s\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	_, yamlErr := corral.LoadConfig(file)

	envCfg, err := corral.ParseConfig([]byte("handlers:\n  fulfil: {subject: a}\n  order_events: {subject: b}\n  order-events: {subject: c}\n"))
	if err != nil {
		t.Fatal(err)
	}
	envErr := envCfg.ApplyEnv([]string{"CORRAL_HANDLERS_FULFIL_WORKRS=3", "CORRAL_HANDLERS_ORDER_EVENTS_WORKERS=2"})

	badCfg, err := corral.ParseConfig([]byte("connection: {servers: [\"http://127.0.0.1:4222\"], ping_interval: -1s}\n"))
	if err != nil {
		t.Fatal(err)
	}
	_, validateErr := corral.New(badCfg, embeddedServer)

	drainCfg, err := corral.ParseConfig([]byte("connection: {restart: {shutdown_timeout: 10s}}\n"))
	if err != nil {
		t.Fatal(err)
	}
	_, drainErr := corral.New(drainCfg, embeddedServer)

	for _, tc := range []struct {
		name string
		err  error
		text func(string) string // the part of the error the README quotes
	}{
		{"a file's mistakes", yamlErr, func(s string) string { return strings.ReplaceAll(s, file, "corral.yaml") }},
		{"the environment's mistakes", envErr, nil},
		{"validation", validateErr, nil},
		{"a connection's own shutdown timeout", drainErr, func(s string) string { return strings.TrimPrefix(s, "invalid config: ") }},
	} {
		if tc.err == nil {
			t.Errorf("%s: no error", tc.name)
			continue
		}
		want := tc.err.Error()
		if tc.text != nil {
			want = tc.text(want)
		}
		if !strings.Contains(string(readme), want) {
			t.Errorf("%s: the README does not quote the error the code gives:\n%s", tc.name, want)
		}
	}
}
