package tasks_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/corral-go/corral/internal/natstest"
	"github.com/corral-go/corral/tasks"
)

// The queues a server holds are found by their streams, each with its
// name, stream and subject; other streams are not queues.
func TestFindQueues(t *testing.T) {
	t.Parallel()
	srv := natstest.RunServer(t)
	nc := natstest.Connect(t, srv.URL())
	js := declareQueue(t, nc, tasks.Config{}, "q")
	declareQueue(t, nc, tasks.Config{Subject: "jobs.render", Stream: "RENDER"}, "render")
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: "ORDERS", Subjects: []string{"orders.>"}}); err != nil {
		t.Fatal(err)
	}
	found, err := tasks.FindQueues(ctx, js)
	if err != nil {
		t.Fatal(err)
	}
	want := "[{q TASKS_q corral.tasks.q the account's own} {render RENDER jobs.render the account's own}]"
	if got := fmt.Sprint(found); got != want {
		t.Fatalf("found %s, want %s", got, want)
	}
	if cfg := found[1].Config(); cfg.Stream != "RENDER" || cfg.Subject != "jobs.render" {
		t.Fatalf("config %+v", cfg)
	}
}
