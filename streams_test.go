package corral_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/corral-go/corral"
	"github.com/corral-go/corral/consumer"
	"github.com/corral-go/corral/internal/natstest"
	"github.com/corral-go/corral/supervisor"
)

// A stream declared once in the file exists before its JetStream handler
// declares its consumer, wherever the file declares it: on a fresh server
// the start logs no ERROR and restarts nothing, and the handler gets what
// is published. Each form runs on three fresh servers, as the race it
// guards against lost on two of three.
func TestStreamsDeclaredOnceStartCleanly(t *testing.T) {
	t.Parallel()
	for _, form := range []struct{ name, yaml string }{
		{"streams", "streams: {ORDERS: {subjects: [orders.>]}}"},
		{"publisher.streams", "publisher: {streams: {ORDERS: {subjects: [orders.>]}}}"},
	} {
		for i := range 3 {
			t.Run(fmt.Sprintf("%s/%d", form.name, i), func(t *testing.T) {
				t.Parallel()
				parsed, err := corral.ParseConfig([]byte(form.yaml + "\nhandlers: {fulfil: {subject: orders.new, stream: ORDERS}}"))
				if err != nil {
					t.Fatal(err)
				}
				cfg := embeddedConfig(t)
				cfg.Streams, cfg.Publisher.Streams, cfg.Handlers = parsed.Streams, parsed.Publisher.Streams, parsed.Handlers
				core, logs := observer.New(zapcore.ErrorLevel)
				rec := natstest.NewRecorder()
				c, err := corral.New(cfg, embeddedServer, corral.WithLogger(zap.New(core)), corral.WithEventHook(rec.Hook))
				if err != nil {
					t.Fatal(err)
				}
				got := make(chan string, 1)
				if err := c.Handle("fulfil", consumer.Config{}, consumer.HandlerFunc(func(_ context.Context, m *consumer.Msg) error {
					got <- string(m.Data())
					return nil
				})); err != nil {
					t.Fatal(err)
				}
				running(t, c)
				natstest.WaitFor[consumer.Subscribed](t, rec, 0, 30*time.Second, nil)
				ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
				defer cancel()
				if _, err := c.Publisher().PublishSync(ctx, "orders.new", []byte("o-1")); err != nil {
					t.Fatal(err)
				}
				select {
				case d := <-got:
					if d != "o-1" {
						t.Fatalf("handled %q, want o-1", d)
					}
				case <-ctx.Done():
					t.Fatal("the handler never got the order")
				}
				for _, e := range logs.All() {
					t.Errorf("ERROR logged on a healthy start: %s %v", e.Message, e.ContextMap())
				}
				if failed := natstest.All[supervisor.ChildFailed](rec); len(failed) > 0 {
					t.Errorf("a child failed on a healthy start: %+v", failed)
				}
			})
		}
	}
}

// What the file can tell about its streams is checked at New, each
// problem naming its field.
func TestStreamMistakesCaughtAtNew(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ name, yaml, want string }{
		{"declared twice, differently",
			"streams: {ORDERS: {subjects: [orders.>]}}\npublisher: {streams: {ORDERS: {subjects: [orders.new]}}}",
			"publisher.streams.ORDERS: differs from streams.ORDERS"},
		{"create_stream differs",
			"streams: {ORDERS: {subjects: [orders.>]}}\nhandlers: {fulfil: {subject: orders.new, stream: ORDERS, create_stream: {subjects: [orders.*]}}}",
			"handlers.fulfil.create_stream: differs"},
		{"two streams store one subject",
			"streams: {ORDERS: {subjects: [orders.>]}, NEW: {subjects: [orders.new]}}",
			`subject "orders.new" overlaps ORDERS's "orders.>"`},
		{"a task queue's subject taken",
			"streams: {ALL: {subjects: [\"corral.tasks.>\"]}}\ntasks: {render: {}}",
			"overlaps"},
		{"handler subject outside its stream",
			"streams: {ORDERS: {subjects: [orders.>]}}\nhandlers: {fulfil: {subject: billing.new, stream: ORDERS}}",
			`handlers.fulfil.subject: "billing.new" is not stored by stream ORDERS`},
		{"dead letters back to the handler",
			"streams: {ORDERS: {subjects: [orders.>]}}\nhandlers: {fulfil: {subject: \"orders.>\", stream: ORDERS, dead_letter: orders.dead}}",
			`handlers.fulfil.dead_letter: "orders.dead" is stored by stream ORDERS and selected by this handler`},
		{"bad stream name",
			"streams: {\"OR DERS\": {subjects: [orders.>]}}",
			"streams: stream"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			cfg, err := corral.ParseConfig([]byte(tc.yaml))
			if err != nil {
				t.Fatal(err)
			}
			_, err = corral.New(cfg, embeddedServer)
			if !errors.Is(err, corral.ErrInvalidConfig) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("New: %v\nwant ErrInvalidConfig with %q", err, tc.want)
			}
		})
	}
}

// A handler declared in code is checked against the file's stream at
// Handle, and given the declaration when it has none of its own.
func TestHandlerCheckedAgainstTheFilesStream(t *testing.T) {
	t.Parallel()
	parsed, err := corral.ParseConfig([]byte("streams: {ORDERS: {subjects: [orders.>]}}"))
	if err != nil {
		t.Fatal(err)
	}
	cfg := embeddedConfig(t)
	cfg.Streams = parsed.Streams
	c, err := corral.New(cfg, embeddedServer)
	if err != nil {
		t.Fatal(err)
	}
	nop := consumer.HandlerFunc(func(context.Context, *consumer.Msg) error { return nil })
	err = c.Handle("fulfil", consumer.Config{Subject: "orders.>", JetStream: consumer.JetStream{Stream: "ORDERS", DeadLetter: "orders.dead"}}, nop)
	if !errors.Is(err, corral.ErrInvalidConfig) || !strings.Contains(err.Error(), "handlers.fulfil.dead_letter") {
		t.Fatalf("Handle with dead letters back to itself: %v, want ErrInvalidConfig naming handlers.fulfil.dead_letter", err)
	}
	if err := c.Handle("fulfil", consumer.Config{Subject: "orders.new", JetStream: consumer.JetStream{Stream: "ORDERS"}}, nop); err != nil {
		t.Fatalf("Handle of a stream the file declares: %v", err)
	}
}
