package corraltest_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/corral-go/corral"
	"github.com/corral-go/corral/consumer"
	"github.com/corral-go/corral/corraltest"
	"github.com/corral-go/corral/internal/natstest"
	"github.com/corral-go/corral/supervisor"
)

// Each WaitOutcome returns the next outcome of its handler; the cursor of
// "" (any handler) is its own, and Outcomes moves none.
func TestWaitOutcomeFollowsEachHandler(t *testing.T) {
	ctx := t.Context()
	kit := corraltest.New(t, corral.Config{})
	fail := consumer.HandlerFunc(func(context.Context, *consumer.Msg) error { return errors.New("no") })
	for name, h := range map[string]consumer.Handler{"a": consumer.HandlerFunc(ok), "b": fail} {
		if err := kit.Client.Handle(name, consumer.Config{Subject: name}, h); err != nil {
			t.Fatal(err)
		}
	}
	kit.Start(ctx)

	kit.PublishCore(ctx, "a", []byte("1"))
	if o := kit.WaitOutcome(ctx, "a"); o.Handler != "a" || string(o.Data) != "1" || o.Err != nil || o.Metadata != nil {
		t.Fatalf("first of a: %v", o)
	}
	msg := nats.NewMsg("b")
	msg.Header.Set("Trace", "t1")
	if err := kit.Client.PublishCoreMsg(ctx, msg); err != nil {
		t.Fatal(err)
	}
	o := kit.WaitOutcome(ctx, "b")
	if o.Err == nil || o.Err.Error() != "no" || o.Header.Get("Trace") != "t1" {
		t.Fatalf("b: %v header %v", o, o.Header)
	}
	kit.PublishCore(ctx, "a", []byte("2"))
	if o := kit.WaitOutcome(ctx, "a"); string(o.Data) != "2" {
		t.Fatalf("second of a: %v", o)
	}
	if got := kit.WaitOutcomes(ctx, "", 3); got[0].Handler != "a" || got[1].Handler != "b" || got[2].Handler != "a" {
		t.Fatalf("any handler: %v", got)
	}
	if got := kit.Outcomes("a"); len(got) != 2 {
		t.Fatalf("Outcomes(a): %v", got)
	}
}

// A wait that times out fails the test with every outcome it saw and the
// handlers declared.
func TestWaitOutcomeFailsWithWhatItSaw(t *testing.T) {
	reports, failed := runTest(func(ft testing.TB) {
		kit := corraltest.New(ft, corral.Config{})
		if err := kit.Client.Handle("a", consumer.Config{Subject: "a"}, consumer.HandlerFunc(ok)); err != nil {
			ft.Fatal(err)
		}
		kit.Start(ft.Context())
		kit.PublishCore(ft.Context(), "a", []byte("only one"))
		kit.WaitOutcome(ft.Context(), "a")
		ctx, cancel := context.WithTimeout(ft.Context(), 200*time.Millisecond)
		defer cancel()
		kit.WaitOutcomes(ctx, "a", 2)
		ft.Errorf("WaitOutcomes returned")
	})
	if !failed {
		t.Fatal("the wait passed")
	}
	wantReport(t, reports, `waited for 2 new outcome(s) of handler "a", got 0 (1 taken before)`,
		context.DeadlineExceeded.Error(), `handlers declared: ["a"]`, `handler "a" subject "a" data "only one": ok`)
}

// A handler's panic is recorded as a *supervisor.PanicError, and still
// reaches the Client's recovery, which counts it.
func TestPanicIsRecordedAndCounted(t *testing.T) {
	ctx := t.Context()
	kit := corraltest.New(t, corral.Config{})
	boom := consumer.HandlerFunc(func(context.Context, *consumer.Msg) error { panic("boom") })
	if err := kit.Client.Handle("boom", consumer.Config{Subject: "boom"}, boom); err != nil {
		t.Fatal(err)
	}
	kit.Start(ctx)
	kit.PublishCore(ctx, "boom", nil)
	o := kit.WaitOutcome(ctx, "boom")
	var pe *supervisor.PanicError
	if !errors.As(o.Err, &pe) || pe.Value != "boom" || len(pe.Stack) == 0 {
		t.Fatalf("outcome %v, want a PanicError of boom with a stack", o)
	}
	// Counted after the outcome is recorded, with no event of its own.
	natstest.Eventually(t, corraltest.DefaultTimeout, func() bool {
		return kit.Client.Status().Handlers[0].Counters.Panicked == 1
	}, func() string { return fmt.Sprintf("counters %+v", kit.Client.Status().Handlers[0].Counters) })
}
