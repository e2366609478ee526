package jsapi_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/corral-go/corral/internal/jsapi"
	"github.com/corral-go/corral/internal/natstest"
)

// A request the server leaves unanswered, as a cluster does with all but
// one of concurrent declarations, is asked again after a short wait, not
// after the caller's whole deadline; "not available" is asked again;
// any other answer is returned at once.
func TestAskAgainUntilAnswered(t *testing.T) {
	t.Parallel()
	srv := natstest.RunServer(t)
	nc := natstest.Connect(t, srv.URL())
	var asked atomic.Int32
	// The responder leaves the first request unanswered, says the second
	// time that the cluster is not available, and answers the third.
	sub, err := nc.Subscribe("declare", func(m *nats.Msg) {
		switch asked.Add(1) {
		case 1:
		case 2:
			_ = m.Respond([]byte("unavailable"))
		default:
			_ = m.Respond([]byte("done"))
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = sub.Unsubscribe() }()
	req := func(ctx context.Context) (string, error) {
		m, err := nc.RequestWithContext(ctx, "declare", nil)
		if err != nil {
			return "", err
		}
		if string(m.Data) == "unavailable" {
			return "", &jetstream.APIError{Code: 503, ErrorCode: jsapi.CodeClusterNotAvailable}
		}
		return string(m.Data), nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	start := time.Now()
	got, err := jsapi.Ask(ctx, req)
	if got != "done" || err != nil || asked.Load() != 3 {
		t.Fatalf("Ask: %q, %v after %d requests; want done after 3", got, err, asked.Load())
	}
	if took := time.Since(start); took > 5*time.Second {
		t.Fatalf("Ask took %v: an unanswered try waited past its own bound", took)
	}

	final := &jetstream.APIError{Code: 400, ErrorCode: jetstream.JSErrCodeStreamNotFound}
	var tries atomic.Int32
	if _, err := jsapi.Ask(ctx, func(context.Context) (int, error) { tries.Add(1); return 0, final }); !errors.Is(err, final) || tries.Load() != 1 {
		t.Fatalf("Ask of a final answer: %v after %d tries, want it at once", err, tries.Load())
	}

	silent, err := nc.Subscribe("silent", func(*nats.Msg) {})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = silent.Unsubscribe() }()
	short, cancelShort := context.WithTimeout(ctx, 1500*time.Millisecond)
	defer cancelShort()
	if _, err := jsapi.Ask(short, func(ctx context.Context) (*nats.Msg, error) {
		return nc.RequestWithContext(ctx, "silent", nil)
	}); !errors.Is(err, context.DeadlineExceeded) || short.Err() == nil {
		t.Fatalf("Ask of a request never answered: %v before its ctx ended, want the last try's error after", err)
	}
}
