package corral_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/thejerf/suture/v4"

	"github.com/corral-go/corral"
	"github.com/corral-go/corral/consumer"
	"github.com/corral-go/corral/internal/natstest"
	"github.com/corral-go/corral/supervisor"
)

// A handler the file declares and code never binds fails Run before any
// child starts, naming every such handler and the fix, in Corral's words.
func TestUnboundHandlersFailRunBeforeAnythingStarts(t *testing.T) {
	cfg, err := corral.ParseConfig([]byte(`
handlers:
  lonely: {subject: nobody.binds.me}
  orphan: {subject: nor.me}
`))
	if err != nil {
		t.Fatal(err)
	}
	cfg.Server.StoreDir = t.TempDir()
	rec := natstest.NewRecorder()
	c, err := corral.New(cfg, embeddedServer, corral.WithEventHook(rec.Hook))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	err = c.Run(ctx)
	if !errors.Is(err, corral.ErrUnboundHandler) {
		t.Fatalf("Run: got %v, want ErrUnboundHandler", err)
	}
	msg := err.Error()
	for _, want := range []string{`"lonely"`, `"orphan"`, "Handle or HandleRequest", "remove it from the handlers configuration"} {
		if !strings.Contains(msg, want) {
			t.Errorf("Run's error does not say %s:\n%s", want, msg)
		}
	}
	if strings.Contains(msg, suture.ErrDoNotRestart.Error()) {
		t.Errorf("Run's error speaks suture's words:\n%s", msg)
	}
	// Under an application's tree, suture still knows not to restart it.
	if !errors.Is(err, suture.ErrDoNotRestart) {
		t.Errorf("Run's error does not match suture.ErrDoNotRestart: %v", err)
	}
	for _, ev := range rec.Events() {
		if started, ok := ev.(supervisor.ChildStarted); ok {
			t.Errorf("child %s started before Run refused the configuration", started.Child)
		}
	}
}

// Each error names its package once, from the outside in.
func TestErrorsNameTheirPackageOnce(t *testing.T) {
	c, err := corral.New(embeddedConfig(t), embeddedServer)
	if err != nil {
		t.Fatal(err)
	}
	_, kvErr := c.KV("nosuchbucket")
	_, storeErr := c.ObjectStore("nosuchstore")
	_, lockErr := c.Lock("nosuchlock")
	handlerErr := c.Handle("nosuchhandler", consumer.Config{}, consumer.HandlerFunc(func(context.Context, *consumer.Msg) error { return nil }))
	_, queueErr := c.Enqueue(context.Background(), "nosuchqueue", nil)
	for _, tc := range []struct {
		err  error
		want string
	}{
		{kvErr, `corral: bucket not in the kv configuration: "nosuchbucket"`},
		{storeErr, `corral: store not in the object_stores configuration: "nosuchstore"`},
		{lockErr, `corral: lock not in the locks configuration: "nosuchlock"`},
		{handlerErr, `corral: handler not in the handlers configuration and declared without settings: "nosuchhandler"`},
		{queueErr, `corral: task queue not in the tasks configuration: "nosuchqueue"`},
	} {
		if tc.err == nil || tc.err.Error() != tc.want {
			t.Errorf("got %v, want %s", tc.err, tc.want)
		}
	}
}

// Status after a Run refused at once shows no start time for children
// that never started.
func TestStatusAfterAFailedRunShowsNoStartTime(t *testing.T) {
	cfg, err := corral.ParseConfig([]byte("handlers:\n  lonely: {subject: nobody.binds.me}\n"))
	if err != nil {
		t.Fatal(err)
	}
	cfg.Server.StoreDir = t.TempDir()
	c, err := corral.New(cfg, embeddedServer)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Run(context.Background()); !errors.Is(err, corral.ErrUnboundHandler) {
		t.Fatalf("Run: %v, want ErrUnboundHandler", err)
	}
	if s := c.Status().String(); strings.Contains(s, "since=") {
		t.Fatalf("status of children never started shows a start time:\n%s", s)
	}
}
