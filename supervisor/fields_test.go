package supervisor_test

import (
	"bytes"
	"fmt"
	"log/slog"
	"reflect"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"

	"github.com/corral-go/corral/supervisor"
)

// shipped is an application's event: every kind of field, keys from Go
// names, and each of the log tag's options.
type shipped struct {
	supervisor.EventTime
	URL           string
	ServerID      string
	URLs          []string
	MaxAckPending int
	HTTPStatus    int16
	MsgIDs        []label
	Weight        float32
	Took          time.Duration
	Due           time.Time
	Severity      supervisor.Level // a fmt.Stringer
	Carrier       label            // a named string
	Err           error
	CloseErr      error `log:"close_error"`
	Extra         map[string]int
	Stream        string `log:",omitempty"`
	Consumer      string `log:",omitempty=Stream"`
	Note          string `log:"memo,omitempty"`
	Token         string `log:"-"`
	Box
	hidden int
}

type label string

// Box is flattened into the event that embeds it.
type Box struct {
	Size  uint8
	Count uint64 `log:",omitempty"`
}

func (shipped) Kind() string { return "app.shipped" }

var shippedAt = supervisor.EventTime{At: time.Date(2024, 5, 6, 7, 8, 9, 0, time.UTC)}

// full has every field set; sparse leaves out what may be left out.
var (
	full = shipped{EventTime: shippedAt, URL: "nats://a:4222", ServerID: "N1", URLs: []string{"nats://b:4222"},
		MaxAckPending: 100, HTTPStatus: 503, MsgIDs: []label{"m1", "m2"}, Weight: 1.5, Took: 2500 * time.Millisecond,
		Due: time.Date(2024, 5, 7, 0, 0, 0, 0, time.UTC), Severity: supervisor.WarnLevel, Carrier: "post",
		Err:      fmt.Errorf("ship: %w", &supervisor.PanicError{Value: "boom", Stack: []byte("stack 1\n")}),
		CloseErr: &supervisor.PanicError{Value: 2, Stack: []byte("stack 2\n")}, Extra: map[string]int{"a": 1},
		Stream: "S", Consumer: "C", Note: "n", Token: "secret", Box: Box{Size: 7, Count: 9}, hidden: 1}
	sparse = shipped{EventTime: shippedAt, Consumer: "C", Token: "secret"}
)

// zapLine is the JSON zap writes for a line with fields f.
func zapLine(f zapcore.ObjectMarshaler) string {
	var buf bytes.Buffer
	cfg := zap.NewProductionEncoderConfig()
	cfg.TimeKey = ""
	zap.New(zapcore.NewCore(zapcore.NewJSONEncoder(cfg), zapcore.AddSync(&buf), zapcore.DebugLevel)).
		Info("m", zap.Inline(f))
	return strings.TrimSuffix(buf.String(), "\n")
}

// slogLine is the JSON slog writes for a line with fields f, inlined.
func slogLine(f slog.LogValuer) string {
	var buf bytes.Buffer
	slog.New(slog.NewJSONHandler(&buf, &slog.HandlerOptions{ReplaceAttr: func(groups []string, a slog.Attr) slog.Attr {
		if a.Key == slog.TimeKey && len(groups) == 0 {
			return slog.Attr{}
		}
		return a
	}})).Info("m", slog.Any("", f))
	return strings.TrimSuffix(buf.String(), "\n")
}

// An application's event is logged as Corral's are: keys in snake case,
// embedded structs flattened, tags obeyed, the event's time and its
// unexported fields left out.
func TestFieldsOfAnApplicationEvent(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name      string
		ev        supervisor.Event
		zap, slog string
	}{
		{"full", full,
			`{"level":"info","msg":"m","url":"nats://a:4222","server_id":"N1","urls":["nats://b:4222"],"max_ack_pending":100,` +
				`"http_status":503,"msg_ids":["m1","m2"],"weight":1.5,"took":2.5,"due":1715040000,"severity":"warn",` +
				`"carrier":"post","error":"ship: panic: boom","stack":"stack 1\n","close_error":"panic: 2",` +
				`"close_stack":"stack 2\n","extra":{"a":1},"stream":"S","consumer":"C","memo":"n","size":7,"count":9}`,
			`{"level":"INFO","msg":"m","url":"nats://a:4222","server_id":"N1","urls":["nats://b:4222"],"max_ack_pending":100,` +
				`"http_status":503,"msg_ids":["m1","m2"],"weight":1.5,"took":2500000000,"due":"2024-05-07T00:00:00Z","severity":"warn",` +
				`"carrier":"post","error":"ship: panic: boom","stack":"stack 1\n","close_error":"panic: 2",` +
				`"close_stack":"stack 2\n","extra":{"a":1},"stream":"S","consumer":"C","memo":"n","size":7,"count":9}`},
		{"sparse", sparse,
			`{"level":"info","msg":"m","url":"","server_id":"","urls":[],"max_ack_pending":0,"http_status":0,"msg_ids":[],` +
				`"weight":0,"took":0,"due":-6795364578.8713455,"severity":"info","carrier":"","extra":null,"size":0}`,
			`{"level":"INFO","msg":"m","url":"","server_id":"","urls":[],"max_ack_pending":0,"http_status":0,"msg_ids":[],` +
				`"weight":0,"took":0,"due":"0001-01-01T00:00:00Z","severity":"info","carrier":"","extra":null,"size":0}`},
		{"pointer", &sparse,
			`{"level":"info","msg":"m","url":"","server_id":"","urls":[],"max_ack_pending":0,"http_status":0,"msg_ids":[],` +
				`"weight":0,"took":0,"due":-6795364578.8713455,"severity":"info","carrier":"","extra":null,"size":0}`,
			`{"level":"INFO","msg":"m","url":"","server_id":"","urls":[],"max_ack_pending":0,"http_status":0,"msg_ids":[],` +
				`"weight":0,"took":0,"due":"0001-01-01T00:00:00Z","severity":"info","carrier":"","extra":null,"size":0}`},
		{"nil pointer", (*shipped)(nil), `{"level":"info","msg":"m"}`, `{"level":"INFO","msg":"m"}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := supervisor.EventFields(tt.ev)
			if got := zapLine(f); got != tt.zap {
				t.Errorf("zap line\n%s\nwant\n%s", got, tt.zap)
			}
			if got := slogLine(f); got != tt.slog {
				t.Errorf("slog line\n%s\nwant\n%s", got, tt.slog)
			}
		})
	}
}

// Map holds the values a zap line has, each of its own type.
func TestFieldsMap(t *testing.T) {
	t.Parallel()
	got := supervisor.EventFields(full).Map()
	want := map[string]any{
		"url": "nats://a:4222", "server_id": "N1", "urls": []any{"nats://b:4222"}, "max_ack_pending": 100,
		"http_status": int64(503), "msg_ids": []any{"m1", "m2"}, "weight": float32(1.5), "took": 2500 * time.Millisecond,
		"due": time.Date(2024, 5, 7, 0, 0, 0, 0, time.UTC), "severity": "warn", "carrier": "post",
		"error": "ship: panic: boom", "stack": "stack 1\n", "close_error": "panic: 2", "close_stack": "stack 2\n",
		"extra": map[string]int{"a": 1}, "stream": "S", "consumer": "C", "memo": "n", "size": uint64(7), "count": uint64(9),
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("Map() = %#v\nwant %#v", got, want)
	}
	if m := supervisor.EventFields(nil).Map(); len(m) != 0 {
		t.Errorf("Map() of no event = %v, want empty", m)
	}
}

// name's String dereferences its receiver.
type name struct{ s string }

func (n *name) String() string { return n.s }

// explosive's MarshalJSON panics.
type explosive struct{}

func (explosive) MarshalJSON() ([]byte, error) { panic("boom") }

// odd is an event whose fields misbehave when they are logged.
type odd struct {
	supervisor.EventTime
	Err     error                  // a typed nil whose Error panics
	Panic   *supervisor.PanicError // nil: no error
	Name    *name                  // nil: its String panics
	Blast   explosive
	Visible string
}

func (odd) Kind() string { return "app.odd" }

// A field whose Error, String or MarshalJSON panics is written as a note,
// and the rest of the line is still written.
func TestFieldsSurviveOddFields(t *testing.T) {
	t.Parallel()
	f := supervisor.EventFields(odd{Err: (*supervisor.PanicError)(nil), Visible: "yes"})
	want := `{"level":"info","msg":"m","error":"*supervisor.PanicError (its Error method panicked)",` +
		`"name":"*supervisor_test.name (its String method panicked)","blast":"supervisor_test.explosive (logging it panicked)","visible":"yes"}`
	if got := zapLine(f); got != want {
		t.Errorf("zap line\n%s\nwant\n%s", got, want)
	}
	want = `{"level":"INFO","msg":"m","error":"*supervisor.PanicError (its Error method panicked)",` +
		`"name":"*supervisor_test.name (its String method panicked)","blast":"!PANIC: boom","visible":"yes"}`
	if got := slogLine(f); got != want {
		t.Errorf("slog line\n%s\nwant\n%s", got, want)
	}
}

// An event with no Level method of its own is logged at info.
func TestEventTimeLevel(t *testing.T) {
	t.Parallel()
	if got := (shipped{}).Level(); got != supervisor.InfoLevel {
		t.Fatalf("Level() = %v, want info", got)
	}
}
