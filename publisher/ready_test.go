package publisher_test

import (
	"context"
	"errors"
	"testing"
	"time"

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
		st, changed := p.Observe()
		if st.Ready {
			break
		}
		select {
		case <-changed:
		case <-ctx.Done():
			t.Fatalf("the publisher was not ready in time: %+v", st)
		}
	}
	if _, err := natstest.JetStream(t, srv.URL()).Stream(ctx, "READY"); err != nil {
		t.Fatalf("ready before its stream was declared: %v", err)
	}
	if err := stop(); !errors.Is(err, context.Canceled) {
		t.Fatal(err)
	}
	if p.Status().Ready {
		t.Fatal("ready after Serve returned")
	}
}
