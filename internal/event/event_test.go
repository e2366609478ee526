package event_test

import (
	"io"
	"testing"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/corral-go/corral/internal/event"
	"github.com/corral-go/corral/internal/leakcheck"
	"github.com/corral-go/corral/supervisor"
)

func TestMain(m *testing.M) { leakcheck.VerifyTestMain(m) }

// A hook that panics is logged, and the goroutine that emitted the event
// (a worker, a nats.go callback) goes on.
func TestEmitSurvivesAPanickingHook(t *testing.T) {
	core, logs := observer.New(zapcore.DebugLevel)
	calls := 0
	e := event.New(supervisor.Events{Logger: zap.New(core), Hook: func(supervisor.Event) {
		calls++
		panic("hook bug")
	}})
	ev := supervisor.ChildStarted{Child: "c"}
	e.Emit(ev)
	e.Emit(ev)
	if calls != 2 {
		t.Fatalf("hook called %d times, want 2", calls)
	}
	if n := logs.FilterMessage("event hook or logger panicked").Len(); n != 2 {
		t.Fatalf("%d panic lines logged, want 2", n)
	}
	if n := logs.FilterMessage("supervisor.child_started").Len(); n != 2 {
		t.Fatalf("%d event lines logged, want 2", n)
	}
}

// An event below the logger's level costs no allocation: a production
// logger at info skips debug events (a subscription, a first start) for
// free.
func TestEmitBelowTheLevelAllocatesNothing(t *testing.T) {
	e := event.New(supervisor.Events{Logger: zap.New(zapcore.NewCore(
		zapcore.NewJSONEncoder(zap.NewProductionEncoderConfig()), zapcore.AddSync(io.Discard), zapcore.InfoLevel))})
	var ev supervisor.Event = supervisor.ChildStarted{Child: "c"}
	if n := testing.AllocsPerRun(100, func() { e.Emit(ev) }); n != 0 {
		t.Fatalf("Emit of a debug event at info allocated %v times, want 0", n)
	}
}
