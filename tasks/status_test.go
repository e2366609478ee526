package tasks_test

import (
	"context"
	"testing"
	"time"

	"github.com/corral-go/corral/connection"
	"github.com/corral-go/corral/internal/natstest"
	"github.com/corral-go/corral/supervisor"
	"github.com/corral-go/corral/tasks"
)

// By the time LeaseAcquired is emitted, Status reports the lease held, so
// that a reader woken by the event sees it.
func TestStatusHoldsTheLeaseWhenTheEventSaysSo(t *testing.T) {
	t.Parallel()
	srv := natstest.RunServer(t)
	var w *tasks.Worker
	seen := make(chan tasks.LeaseState, 1)
	cfg := childConfig
	cfg.Events = supervisor.Events{Hook: func(e supervisor.Event) {
		if _, ok := e.(tasks.LeaseAcquired); ok {
			select {
			case seen <- w.Status().Lease:
			default:
			}
		}
	}}
	w, err := tasks.New("q", cfg, connection.NewFixed(natstest.Connect(t, srv.URL())), tasks.HandlerFunc(func(context.Context, *tasks.Task) error { return nil }))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- w.Serve(ctx) }()
	defer func() { cancel(); <-served }()
	select {
	case got := <-seen:
		if got != tasks.LeaseStateHeld {
			t.Fatalf("Status().Lease = %v when LeaseAcquired was emitted, want %v", got, tasks.LeaseStateHeld)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("no LeaseAcquired")
	}
}
