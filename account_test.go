package corral_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/corral-go/corral"
	"github.com/corral-go/corral/consumer"
	"github.com/corral-go/corral/internal/natstest"
	"github.com/corral-go/corral/kv"
	"github.com/corral-go/corral/stream"
	"github.com/corral-go/corral/tasks"
)

// sharedJetStream is a server whose account SHARED has JetStream and
// exports its API, and whose account APP, without JetStream of its own,
// imports it under the prefix JS.shared.API, with what a Client's
// stream, bucket and task queue publish to.
const sharedJetStream = `
accounts: {
  SHARED: {
    jetstream: enabled
    users: [{user: shared, password: shared}]
    exports: [
      {service: "$JS.API.>", response_type: stream}
      {service: "$JS.ACK.>"}
      {service: "$KV.>"}
      {service: "orders.>"}
      {service: "corral.tasks.>"}
    ]
  }
  APP: {
    users: [{user: app, password: app}]
    imports: [
      {service: {account: SHARED, subject: "$JS.API.>"}, to: "JS.shared.API.>"}
      {service: {account: SHARED, subject: "$JS.ACK.>"}}
      {service: {account: SHARED, subject: "$KV.>"}, to: "JS.shared.API.$KV.>"}
      {service: {account: SHARED, subject: "orders.>"}}
      {service: {account: SHARED, subject: "corral.tasks.>"}}
    ]
  }
}
`

// A Client of an account without JetStream uses the JetStream another
// account exports, by the prefix it imports it under (api_prefix): it
// declares a stream there, publishes to it and handles from it, puts to
// and reads a bucket there, and runs a task queue there.
func TestAPIPrefixReachesAnotherAccountsJetStream(t *testing.T) {
	t.Parallel()
	srv := natstest.RunServer(t, natstest.WithConfig(t, sharedJetStream))
	cfg := corral.Config{Name: "app"}
	cfg.Connection.Servers = []string{srv.URL()}
	cfg.Connection.Auth.User, cfg.Connection.Auth.Password = "app", "app"
	cfg.JetStreamAPI.APIPrefix = "JS.shared.API"
	cfg.Streams = map[string]stream.Config{"ORDERS": {Subjects: []string{"orders.>"}}}
	cfg.KV = map[string]kv.Config{"settings": {}}
	cfg.Tasks = map[string]tasks.Config{"render": {KeepCompleted: time.Minute}}
	c, err := corral.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	saw := newSeen()
	if err := c.Handle("fulfil", consumer.Config{Subject: "orders.>", JetStream: consumer.JetStream{Stream: "ORDERS"}},
		consumer.HandlerFunc(func(_ context.Context, m *consumer.Msg) error {
			saw.note("orders", string(m.Data()))
			return nil
		})); err != nil {
		t.Fatal(err)
	}
	if err := c.HandleTasks("render", tasks.Config{}, tasks.HandlerFunc(func(context.Context, *tasks.Task) error {
		return nil
	})); err != nil {
		t.Fatal(err)
	}
	ctx := runReady(t, c)

	var sent []string
	for i := range 10 {
		sent = append(sent, fmt.Sprintf("order-%d", i))
		f, err := c.Publish(ctx, "orders.new", []byte(sent[i]))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := f.Wait(ctx); err != nil {
			t.Fatalf("order %d: %v", i, err)
		}
	}
	saw.waitFor(t, ctx, "orders handled", "orders", sent)
	settings, err := c.KV("settings")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := settings.Put(ctx, "mode", []byte("shared")); err != nil {
		t.Fatalf("Put: %v", err)
	}
	if e, err := settings.Get(ctx, "mode"); err != nil || string(e.Value) != "shared" {
		t.Fatalf("Get: %v, %v", e, err)
	}
	e, err := c.EnqueueTask(ctx, "render", nil, tasks.WithID("job-1"))
	if err != nil {
		t.Fatal(err)
	}
	if err := e.Wait(ctx); err != nil {
		t.Fatal(err)
	}
	q, err := c.Tasks("render")
	if err != nil {
		t.Fatal(err)
	}
	if info, err := q.Wait(ctx, "job-1"); err != nil || info.State != tasks.StateCompleted {
		t.Fatalf("job-1: %+v, %v", info, err)
	}

	// All of it is the SHARED account's.
	js := natstest.JetStream(t, srv.URL(), nats.UserInfo("shared", "shared"))
	for _, name := range []string{"ORDERS", "KV_settings", "TASKS_render", "TASKS_render_HELD"} {
		if _, err := js.Stream(ctx, name); err != nil {
			t.Errorf("stream %s in the SHARED account: %v", name, err)
		}
	}
}
