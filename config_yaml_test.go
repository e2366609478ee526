package corral_test

import (
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/corral-go/corral"
)

// Every mistake in a YAML file is reported at once, each with its path
// and line, as validation reports, and never with a Go type's name.
func TestYAMLMistakesNamePathAndLine(t *testing.T) {
	t.Parallel()
	doc := `name: billing
handlers:
  fulfil:
    subject: orders.paid
    workers: "eight"
  audit: {subject: audit.>, workrs: 2}
restart:
  restart_dely: 1s
connection:
  ping_interval: soon
  reconnect_buf_size: lots
  servers: nats://127.0.0.1:4222
`
	path := filepath.Join(t.TempDir(), "corral.yaml")
	if err := writeFile(path, doc); err != nil {
		t.Fatal(err)
	}
	_, err := corral.LoadConfig(path)
	if !errors.Is(err, corral.ErrInvalidConfig) || !errors.Is(err, corral.ErrConfigFile) {
		t.Fatalf("got %v, want ErrConfigFile and ErrInvalidConfig", err)
	}
	if want := "corral: config file " + path + ": invalid config: "; !strings.HasPrefix(err.Error(), want) {
		t.Errorf("got %q, want it to start with %q", err, want)
	}
	var ve *corral.ValidationError
	if !errors.As(err, &ve) {
		t.Fatalf("got %T, want a *corral.ValidationError", err)
	}
	want := map[string]string{
		"handlers.fulfil.workers":       "line 5",
		"handlers.audit.workrs":         "line 6",
		"restart.restart_dely":          "line 8",
		"connection.ping_interval":      "line 10",
		"connection.reconnect_buf_size": "line 11",
		"connection.servers":            "line 12",
	}
	got := map[string]bool{}
	for _, p := range ve.Problems {
		got[p.Field] = true
	}
	for field, line := range want {
		if !got[field] || !strings.Contains(err.Error(), field+" ("+line+")") {
			t.Errorf("%s (%s) not reported; got %v", field, line, err)
		}
	}
	if len(ve.Problems) != len(want) {
		t.Errorf("got %d problems, want %d: %v", len(ve.Problems), len(want), err)
	}
	for _, leak := range []string{"supervisor.", "plain", "consumer.", "time.Duration", "!!"} {
		if strings.Contains(err.Error(), leak) {
			t.Errorf("error shows Go or YAML internals (%q): %v", leak, err)
		}
	}
}

// A file that is not YAML at all is refused with its line.
func TestYAMLSyntaxErrorNamesLine(t *testing.T) {
	t.Parallel()
	_, err := corral.ParseConfig([]byte("name: billing\nhandlers: [a\n"))
	if !errors.Is(err, corral.ErrInvalidConfig) || !strings.Contains(err.Error(), "line ") {
		t.Fatalf("got %v, want ErrInvalidConfig naming a line", err)
	}
}

// A second document is refused: read alone, the first would run the
// embedded server, the second's servers unseen.
func TestYAMLSecondDocumentIsRefused(t *testing.T) {
	t.Parallel()
	_, err := corral.ParseConfig([]byte("name: a\n---\nconnection: {servers: [nats://10.0.0.1:4222]}\n"))
	if !errors.Is(err, corral.ErrInvalidConfig) || !strings.Contains(err.Error(), "line 2: a second YAML document") {
		t.Fatalf("got %v, want ErrInvalidConfig naming the second document on line 2", err)
	}
}
