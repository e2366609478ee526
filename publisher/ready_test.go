package publisher_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/corral-go/corral/internal/natstest"
	"github.com/corral-go/corral/publisher"
	"github.com/corral-go/corral/stream"
)

// Watch tells when the publisher is ready, without polling: after its
// streams are declared, until it stops.
func TestWatchSaysWhenReady(t *testing.T) {
	t.Parallel()
	srv := natstest.RunServer(t)
	cfg := publisher.Config{Streams: map[string]stream.Config{"READY": {Subjects: []string{"ready.>"}}}}
	p, _, stop := run(t, []string{srv.URL()}, cfg)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	for {
		st, changed := p.Watch()
		if st.Ready {
			break
		}
		select {
		case <-changed:
		case <-ctx.Done():
			t.Fatalf("the publisher was not ready in time: %+v", st)
		}
	}
	nc, err := nats.Connect(srv.URL())
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := js.Stream(ctx, "READY"); err != nil {
		t.Fatalf("ready before its stream was declared: %v", err)
	}
	if err := stop(); !errors.Is(err, context.Canceled) {
		t.Fatal(err)
	}
	if p.Status().Ready {
		t.Fatal("ready after Serve returned")
	}
}
