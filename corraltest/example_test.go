package corraltest_test

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/corral-go/corral"
	"github.com/corral-go/corral/consumer"
	"github.com/corral-go/corral/corraltest"
	"github.com/corral-go/corral/stream"
)

// A test of a core handler: publish, then wait for what the handler made
// of each message. In a test file the body is a func TestGreet(t
// *testing.T); an Example has no *testing.T, so runExample runs it with a
// stand-in that prints what the test reports.
func Example() {
	runExample(func(t testing.TB) {
		ctx := t.Context()
		kit := corraltest.New(t, corral.Config{})
		greet := consumer.HandlerFunc(func(ctx context.Context, m *consumer.Msg) error {
			if len(m.Data()) == 0 {
				return errors.New("nobody to greet")
			}
			return nil
		})
		if err := kit.Client.Handle("greet", consumer.Config{Subject: "greet"}, greet); err != nil {
			t.Fatal(err)
		}
		kit.Start(ctx)

		kit.PublishCore(ctx, "greet", []byte("corral"))
		kit.PublishCore(ctx, "greet", nil)
		for _, o := range kit.WaitOutcomes(ctx, "greet", 2) {
			fmt.Printf("%s %q: %v\n", o.Subject, o.Data, o.Err)
		}
	})
	// Output:
	// greet "corral": <nil>
	// greet "": nobody to greet
}

// A JetStream handler that refuses a message for good: the outcome is the
// handler's error, and the copy on the dead-letter subject says where the
// message came from and why it failed.
func ExampleKit_WaitDeadLetters() {
	runExample(func(t testing.TB) {
		ctx := t.Context()
		kit := corraltest.New(t, corral.Config{Streams: map[string]stream.Config{
			"ORDERS": {Subjects: []string{"orders.>"}},
			"DEAD":   {Subjects: []string{"dead.>"}}, // keeps the dead letters
		}})
		orders := consumer.Config{Subject: "orders.>", JetStream: consumer.JetStream{Stream: "ORDERS", DeadLetter: "dead.orders"}}
		take := consumer.HandlerFunc(func(ctx context.Context, m *consumer.Msg) error {
			if string(m.Data()) == "poison" {
				return consumer.Terminal(errors.New("not an order"))
			}
			return nil
		})
		if err := kit.Client.Handle("orders", orders, take); err != nil {
			t.Fatal(err)
		}
		kit.Start(ctx)

		ack := kit.Publish(ctx, "orders.new", []byte("poison"))
		fmt.Printf("stored in %s at %d\n", ack.Stream, ack.Sequence)
		o := kit.WaitOutcome(ctx, "orders")
		fmt.Printf("delivery %d: %v\n", o.Metadata.NumDelivered, o.Err)
		for _, d := range kit.WaitDeadLetters(ctx, "dead.orders", 1) {
			fmt.Printf("dead letter %q from %s/%s at %d, %d delivery: %s\n",
				d.Msg.Data, d.Stream, d.Consumer, d.Sequence, d.Deliveries, d.Error)
		}
	})
	// Output:
	// stored in ORDERS at 1
	// delivery 1: terminal: not an order
	// dead letter "poison" from ORDERS/orders at 1, 1 delivery: not an order
}
