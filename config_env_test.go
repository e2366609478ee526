package corral_test

import (
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/corral-go/corral"
)

// envConfig parses doc and applies environ to it.
func envConfig(t *testing.T, doc string, environ ...string) (corral.Config, error) {
	t.Helper()
	cfg, err := corral.ParseConfig([]byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	return cfg, cfg.ApplyEnv(environ)
}

// A variable under the prefix that names no field is an error naming it,
// as an unknown key in the file is; other variables are not looked at.
// With a mistake, no variable is applied.
func TestEnvironmentUnknownVariableIsAnError(t *testing.T) {
	t.Parallel()
	cfg, err := envConfig(t, "handlers:\n  fulfil: {subject: orders.paid, workers: 2}\n",
		"CORRAL_HANDLERS_FULFIL_WORKRS=3", "CORRAL_CONECTION_PING_INTERVAL=1s", "CORRAL_HANDLERS_FULFIL_QUEUE_SIZE=10",
		"HOME=/home/app", "CORRALX=1")
	if !errors.Is(err, corral.ErrInvalidConfig) {
		t.Fatalf("got %v, want ErrInvalidConfig", err)
	}
	for _, name := range []string{"CORRAL_HANDLERS_FULFIL_WORKRS", "CORRAL_CONECTION_PING_INTERVAL"} {
		if !strings.Contains(err.Error(), name) {
			t.Errorf("error %q does not name %s", err, name)
		}
	}
	for _, name := range []string{"HOME", "CORRALX", "QUEUE_SIZE"} {
		if strings.Contains(err.Error(), name) {
			t.Errorf("error %q names %s, which is fine", err, name)
		}
	}
	// Nothing is applied from an environment with a mistake.
	if h := cfg.Handlers["fulfil"]; h.QueueSize != 0 || h.Workers != 2 {
		t.Errorf("fulfil: got queue_size %d, workers %d; want the file's 0 and 2", h.QueueSize, h.Workers)
	}
}

// A variable that two map entries share (order_events and order-events
// both read ORDER_EVENTS) is an error naming both, and sets neither.
func TestEnvironmentAmbiguousVariableNamesBoth(t *testing.T) {
	t.Parallel()
	cfg, err := envConfig(t, `
handlers:
  order_events: {subject: a, workers: 1}
  order-events: {subject: b, workers: 1}
`, "CORRAL_HANDLERS_ORDER_EVENTS_WORKERS=3")
	if !errors.Is(err, corral.ErrInvalidConfig) {
		t.Fatalf("got %v, want ErrInvalidConfig", err)
	}
	for _, s := range []string{"CORRAL_HANDLERS_ORDER_EVENTS_WORKERS", "handlers.order_events.workers", "handlers.order-events.workers"} {
		if !strings.Contains(err.Error(), s) {
			t.Errorf("error %q does not name %s", err, s)
		}
	}
	if cfg.Handlers["order_events"].Workers != 1 || cfg.Handlers["order-events"].Workers != 1 {
		t.Errorf("an ambiguous variable set a handler: %+v", cfg.Handlers)
	}
}

// A variable reaches only the map entries the configuration declares: one
// naming another entry is an error that says to declare it in the file.
func TestEnvironmentDoesNotAddMapEntries(t *testing.T) {
	t.Parallel()
	cfg, err := envConfig(t, "handlers:\n  fulfil: {subject: orders.paid}\n", "CORRAL_HANDLERS_NEWNAME_WORKERS=3")
	if !errors.Is(err, corral.ErrInvalidConfig) || !strings.Contains(err.Error(), "CORRAL_HANDLERS_NEWNAME_WORKERS") ||
		!strings.Contains(err.Error(), "declare") {
		t.Fatalf("got %v, want an error naming the variable and saying to declare the entry", err)
	}
	if len(cfg.Handlers) != 1 {
		t.Errorf("handlers: got %v, want fulfil alone", cfg.Handlers)
	}
}

// The Kubernetes service-link variables are passed over only because no
// section of the configuration is named service or port: a new one would
// make them ambiguous.
func TestNoSectionNamedLikeAServiceLink(t *testing.T) {
	for i := range reflect.TypeFor[corral.Config]().NumField() {
		f := reflect.TypeFor[corral.Config]().Field(i)
		if tag, _, _ := strings.Cut(f.Tag.Get("yaml"), ","); strings.HasPrefix(tag, "service") || strings.HasPrefix(tag, "port") {
			t.Errorf("Config.%s is tagged %q, which CORRAL_SERVICE_*/CORRAL_PORT_* service links would collide with", f.Name, tag)
		}
	}
}
