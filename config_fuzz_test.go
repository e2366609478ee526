package corral_test

import (
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/corral-go/corral"
	"github.com/corral-go/corral/supervisor"
)

// fuzzVars are the variables FuzzConfigEnv overrides, each with how to
// read its field back and what a value should read as (ok false when the
// value has no one reading this test can predict).
var fuzzVars = []struct {
	name string
	got  func(corral.Config) string
	want func(value string) (string, bool)
}{
	{"CORRAL_NAME", func(c corral.Config) string { return c.Name }, func(v string) (string, bool) { return v, true }},
	{"CORRAL_CONNECTION_SERVERS", func(c corral.Config) string { return strings.Join(c.Connection.Servers, ",") },
		func(v string) (string, bool) {
			var parts []string
			for p := range strings.SplitSeq(v, ",") {
				if p = strings.TrimSpace(p); p == "" {
					return "(refused: an empty element)", true
				}
				parts = append(parts, p)
			}
			return strings.Join(parts, ","), true
		}},
	{"CORRAL_RESTART_BACKOFF", func(c corral.Config) string { return c.Restart.Backoff.String() }, durationWant},
	{"CORRAL_RESTART", func(c corral.Config) string { return string(c.Restart.Mode) },
		func(v string) (string, bool) {
			return v, v == string(supervisor.Temporary) || v == string(supervisor.Transient)
		}},
	{"CORRAL_HANDLERS_ORDERS_WORKERS", func(c corral.Config) string { return strconv.Itoa(c.Handlers["orders"].Workers) }, intWant},
	{"CORRAL_HANDLERS_ORDERS_QUEUE_SIZE", func(c corral.Config) string { return strconv.Itoa(c.Handlers["orders"].QueueSize) }, intWant},
	{"CORRAL_KV_SETTINGS_MAX_VALUE_SIZE", func(c corral.Config) string { return strconv.FormatInt(int64(c.KV["settings"].MaxValueSize), 10) }, intWant},
	{"CORRAL_TASKS_JOBS_MAX_CONCURRENCY", func(c corral.Config) string { return strconv.Itoa(c.Tasks["jobs"].MaxConcurrency) }, intWant},
}

func durationWant(v string) (string, bool) {
	d, err := time.ParseDuration(v)
	return d.String(), err == nil
}

func intWant(v string) (string, bool) {
	n, err := strconv.Atoi(v)
	return strconv.Itoa(n), err == nil
}

// FuzzConfigEnv parses any YAML, applies any environment over it, and
// validates the result. Whatever the input: nothing panics; an override
// that is accepted reads back as written; an environment never leaves a
// file's servers empty (which would run the embedded server); and a
// configuration that passes Validate has every handler, bucket and queue
// within the ranges that keep New and Run from crashing.
func FuzzConfigEnv(f *testing.F) {
	const doc = `
name: billing
connection: {servers: [nats://nats-1.example:4222]}
restart: {backoff: 15s}
handlers:
  orders: {subject: orders.created, workers: 4, queue_size: 1024}
kv:
  settings: {history: 5, max_value_size: 1MiB}
tasks:
  jobs: {max_concurrency: 8}
`
	f.Add([]byte(doc), uint8(0), "other", "")
	f.Add([]byte(doc), uint8(1), "", "")
	f.Add([]byte(doc), uint8(1), " , ", "")
	f.Add([]byte(doc), uint8(1), "nats://a:4222,,nats://b:4222", "")
	f.Add([]byte(doc), uint8(2), "~", "")
	f.Add([]byte(doc), uint8(2), "2562047h47m16.854775807s", "")
	f.Add([]byte(doc), uint8(3), "temporary", "")
	f.Add([]byte(doc), uint8(4), "65537", "")
	f.Add([]byte(doc), uint8(5), "1099511627776", "CORRAL_HANDLERS_ORDERS_WORKERS=null")
	f.Add([]byte(doc), uint8(5), "9223372036854775807", "")
	f.Add([]byte(doc), uint8(6), "4294967297", "")
	f.Add([]byte(doc), uint8(7), "-1", "CORRAL_RESTART_MODE=permanent")
	f.Add([]byte("connection: {servers: []}\n"), uint8(0), "x", "CORRAL_SERVICE_HOST=10.0.0.1")
	f.Add([]byte("restart: transient\nhandlers: {a: {}}\n"), uint8(3), "transient", "CORRAL_HANDLERS_A_RESTART=~\nCORRAL_=")
	f.Add([]byte("{"), uint8(0), "x", "")
	f.Fuzz(func(t *testing.T, data []byte, which uint8, value, extra string) {
		cfg, err := corral.ParseConfig(data)
		if err != nil && !errors.Is(err, corral.ErrInvalidConfig) {
			t.Fatalf("ParseConfig: %v does not wrap ErrInvalidConfig", err)
		}
		v := fuzzVars[int(which)%len(fuzzVars)]
		environ := append(strings.Split(extra, "\n"), v.name+"="+value)
		fileServers := len(cfg.Connection.Servers)
		if err := cfg.ApplyEnv(environ); err != nil {
			if !errors.Is(err, corral.ErrInvalidConfig) {
				t.Fatalf("ApplyEnv: %v does not wrap ErrInvalidConfig", err)
			}
			return
		}
		if fileServers > 0 && len(cfg.Connection.Servers) == 0 {
			t.Fatalf("the environment %q left the file's servers empty", environ)
		}
		if !strings.Contains(value, "\n") && !strings.Contains(extra, v.name+"=") && !strings.Contains(value, "\x00") {
			if want, ok := v.want(value); ok && v.got(cfg) != want {
				// A variable reaching no entry the file lacks is refused above.
				t.Fatalf("%s=%q accepted but reads %q, want %q", v.name, value, v.got(cfg), want)
			}
		}
		if err := cfg.Validate(); err != nil {
			if !errors.Is(err, corral.ErrInvalidConfig) {
				t.Fatalf("Validate: %v does not wrap ErrInvalidConfig", err)
			}
			return
		}
		for name, h := range cfg.Handlers {
			if h.Workers > 1<<16 || h.QueueSize > 1<<20 || h.Workers < 0 || h.QueueSize < 0 {
				t.Fatalf("handler %s passed Validate with workers %d, queue_size %d", name, h.Workers, h.QueueSize)
			}
		}
		for name, b := range cfg.KV {
			if b.MaxValueSize < 0 || b.MaxValueSize > 1<<31-1 {
				t.Fatalf("kv %s passed Validate with max_value_size %d", name, b.MaxValueSize)
			}
		}
		if r := cfg.Restart; r.Backoff > 24*time.Hour || r.RestartDelay > 24*time.Hour {
			t.Fatalf("restart passed Validate with %v", r)
		}
	})
}
