package event_test

import (
	"bytes"
	"context"
	"log/slog"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/corral-go/corral/connection"
	"github.com/corral-go/corral/consumer"
	"github.com/corral-go/corral/supervisor"
)

// An event logged with slog, its fields inlined, has the keys and values
// of its zap line, in the same order: with slog's level in lower case and
// a duration in seconds (zap's production encoding), its line is the
// same.
func TestEventLinesWithSlog(t *testing.T) {
	var buf bytes.Buffer
	log := slog.New(slog.NewJSONHandler(&buf, &slog.HandlerOptions{
		Level: slog.LevelDebug,
		ReplaceAttr: func(groups []string, a slog.Attr) slog.Attr {
			switch {
			case len(groups) > 0:
			case a.Key == slog.TimeKey:
				return slog.Attr{}
			case a.Key == slog.LevelKey:
				return slog.String(a.Key, strings.ToLower(a.Value.String()))
			case a.Value.Kind() == slog.KindDuration:
				return slog.Float64(a.Key, a.Value.Duration().Seconds())
			}
			return a
		},
	}))
	for _, l := range eventLines {
		buf.Reset()
		component, _, _ := strings.Cut(l.ev.Kind(), ".")
		log.Log(context.Background(), slog.Level(4*l.ev.Level()), l.ev.Kind(),
			slog.String("component", component), slog.Any("", supervisor.EventFields(l.ev)))
		if got := strings.TrimSuffix(buf.String(), "\n"); got != l.want {
			t.Errorf("%T logged with slog\n%s\nwant\n%s", l.ev, got, l.want)
		}
	}
}

// Map has an event's fields, each as zap's MapObjectEncoder holds it.
func TestEventFieldsMap(t *testing.T) {
	tests := []struct {
		ev   supervisor.Event
		want map[string]any
	}{
		{supervisor.ChildFailed{EventTime: stamp, Child: "orders", Err: panicked, Failures: 1, Threshold: 5,
			Restarting: true, RestartIn: 1500 * time.Millisecond},
			map[string]any{"child": "orders", "error": "panic: boom", "stack": "goroutine 7 [running]:\nmain.work()\n\tmain.go:12\n",
				"failures": 1, "threshold": 5.0, "restarting": true, "restart_in": 1500 * time.Millisecond}},
		{connection.DiscoveredServers{EventTime: stamp, URLs: []string{"nats://10.0.0.2:4222"}, Generation: 1},
			map[string]any{"urls": []any{"nats://10.0.0.2:4222"}, "generation": uint64(1)}},
		{consumer.DeadLetterFailed{DeadLettered: consumer.DeadLettered{EventTime: stamp, Handler: "invoices",
			Subject: "invoices.new", DeadLetter: "dead.invoices", Sequence: 43, Deliveries: 5}, Repeated: 2},
			map[string]any{"handler": "invoices", "subject": "invoices.new", "dead_letter": "dead.invoices",
				"sequence": uint64(43), "deliveries": uint64(5), "repeated": 2}},
		{consumer.SlowConsumerStarted{EventTime: stamp, Handler: "invoices", Subject: "invoices.*", QueueSize: 64,
			Overflow: consumer.DropOldest},
			map[string]any{"handler": "invoices", "subject": "invoices.*", "queue_size": 64, "overflow": "drop_oldest"}},
	}
	for _, tt := range tests {
		if got := supervisor.EventFields(tt.ev).Map(); !reflect.DeepEqual(got, tt.want) {
			t.Errorf("Map() of %T = %#v\nwant %#v", tt.ev, got, tt.want)
		}
	}
}
