package main

import (
	"bytes"
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/corral-go/corral"
	"github.com/corral-go/corral/consumer"
	"github.com/corral-go/corral/corraltest"
)

func TestMain(m *testing.M) { corraltest.VerifyTestMain(m) }

// The orders handler, tested as a user tests theirs: bound as the
// quickstart binds it, on a Client of the test's own that corraltest runs
// on the embedded server until the test ends.
func TestOrdersHandler(t *testing.T) {
	ctx := t.Context()
	kit := corraltest.New(t, corral.Config{})
	ordered := make(chan string, 1)
	if err := declare(kit.Client, make(chan string, 1), ordered); err != nil {
		t.Fatal(err)
	}
	kit.Start(ctx) // waits until the Client is ready

	kit.PublishJSON(ctx, "quickstart.orders.new", Order{ID: 7, Item: "gadget", Quantity: 2})
	if o := kit.WaitOutcome(ctx, "orders"); o.Err != nil {
		t.Fatalf("orders failed: %v", o)
	}
	if got, want := <-ordered, "order #7: 2 x gadget (stream sequence 1, delivery 1)"; got != want {
		t.Errorf("orders said %q, want %q", got, want)
	}

	// A payload that is not an order is refused for good, never retried.
	kit.Publish(ctx, "quickstart.orders.new", []byte("not an order"))
	var bad *consumer.DecodeError
	if o := kit.WaitOutcome(ctx, "orders"); !errors.As(o.Err, &bad) {
		t.Fatalf("orders took %q: %v, want a DecodeError", o.Data, o.Err)
	}
}

// The clock endpoint answers the time, and refuses a request with a
// payload with a 400 service error.
func TestClockEndpoint(t *testing.T) {
	ctx := t.Context()
	kit := corraltest.New(t, corral.Config{})
	if err := declare(kit.Client, make(chan string, 1), make(chan string, 1)); err != nil {
		t.Fatal(err)
	}
	kit.Start(ctx)

	reply := kit.Request(ctx, "quickstart.time", nil)
	if _, err := time.Parse(time.RFC3339, string(reply.Data)); err != nil {
		t.Errorf("the clock answered %q: %v", reply.Data, err)
	}
	_, err := kit.Client.Request(ctx, "quickstart.time", []byte("now?"))
	var se *consumer.ServiceError
	if !errors.As(err, &se) || se.Code != 400 {
		t.Fatalf("a request with a payload: %v, want a 400 service error", err)
	}
	outcomes := kit.WaitOutcomes(ctx, "clock", 2)
	if outcomes[0].Err != nil || !errors.As(outcomes[1].Err, &se) {
		t.Fatalf("outcomes %v, want the first ok, the second the 400", outcomes)
	}
}

func TestQuickstartRunsAndExits(t *testing.T) {
	// The quickstart keeps its data under the working directory.
	t.Chdir(t.TempDir())
	t.Setenv("NATS_URL", "")

	var out bytes.Buffer
	if err := run(context.Background(), nil, &out); err != nil {
		t.Fatalf("run: %v\n%s", err, out.String())
	}
	for _, want := range []string{
		"event: connection.connected", "├── connection", "running", "stopped:",
		`handler greetings received: "hello, corral"`, "endpoint clock answered: ", "code 400",
		`handler orders processed order #1: 3 x widget (stream sequence`,
		"watch settings-watch saw put greeting = {Text:hello Shout:false}",
		"watch settings-watch saw put greeting = {Text:hello Shout:true}",
		"object report.csv: put 22000 bytes", "got 22000 bytes back", "└── settings-watch",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}
}

// The configuration file beside the quickstart retunes what its code
// declares, and the stream it declares is the one the code's handler uses.
func TestQuickstartRunsWithItsConfigFile(t *testing.T) {
	path, err := filepath.Abs("corral.yaml")
	if err != nil {
		t.Fatal(err)
	}
	t.Chdir(t.TempDir())
	t.Setenv("NATS_URL", "")

	var out bytes.Buffer
	if err := run(context.Background(), []string{"-config", path}, &out); err != nil {
		t.Fatalf("run: %v\n%s", err, out.String())
	}
	for _, want := range []string{
		`handler orders processed order #1: 3 x widget (stream sequence`, "stream=QUICKSTART consumer=orders workers=8",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}
}
