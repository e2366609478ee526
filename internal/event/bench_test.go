package event_test

import (
	"errors"
	"io"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"

	"github.com/corral-go/corral/connection"
	"github.com/corral-go/corral/consumer"
	"github.com/corral-go/corral/internal/event"
	"github.com/corral-go/corral/supervisor"
)

// BenchmarkEmit is the cost of logging one typical event as a JSON line:
// its fields encoded, the line written to nowhere.
func BenchmarkEmit(b *testing.B) {
	for _, bc := range []struct {
		name string
		ev   supervisor.Event
	}{
		{"Disconnected", connection.Disconnected{EventTime: stamp, URL: "nats://127.0.0.1:4222",
			Err: errors.New("EOF"), Generation: 2}},
		{"DeadLettered", consumer.DeadLettered{EventTime: stamp, Handler: "invoices", Stream: "INVOICES",
			Consumer: "billing", Subject: "invoices.new", DeadLetter: "dead.invoices", Sequence: 42,
			Deliveries: 5, Err: errors.New("bad total")}},
		{"ChildFailed", supervisor.ChildFailed{EventTime: stamp, Child: "orders", Err: errors.New("db down"),
			Failures: 1, Threshold: 5, Restarting: true, RestartIn: 1500 * time.Millisecond}},
	} {
		b.Run(bc.name, func(b *testing.B) {
			cfg := zap.NewProductionEncoderConfig()
			core := zapcore.NewCore(zapcore.NewJSONEncoder(cfg), zapcore.AddSync(io.Discard), zapcore.DebugLevel)
			e := event.New(supervisor.Events{Logger: zap.New(core)})
			b.ReportAllocs()
			for b.Loop() {
				e.Emit(bc.ev)
			}
		})
	}
}
