package consumer_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/corral-go/corral/consumer"
)

// A request answered with a 4xx service error is the caller's fault, not a
// handler failure: it is counted in ClientErrors (and Processed), not in
// Failed; a 5xx or a plain error is a failure.
func TestClientErrorsAreNotFailures(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	h := consumer.RequestFunc(func(ctx context.Context, m *consumer.Msg) (consumer.Reply, error) {
		switch string(m.Data()) {
		case "400":
			return consumer.Reply{}, consumer.Errorf(400, "bad request")
		case "404":
			return consumer.Reply{}, consumer.Errorf(404, "no such thing")
		case "503":
			return consumer.Reply{}, consumer.Errorf(503, "down")
		case "plain":
			return consumer.Reply{}, errors.New("it broke")
		}
		return consumer.Reply{Data: []byte("ok")}, nil
	})
	if err := e.sup.HandleRequest("svc", consumer.Config{Subject: "svc.x"}, h); err != nil {
		t.Fatal(err)
	}
	stop := e.serve()
	e.subscribed(1)
	for _, req := range []string{"ok", "400", "404", "503", "plain"} {
		if _, err := e.pub.Request("svc.x", []byte(req), 5*time.Second); err != nil {
			t.Fatalf("%s: %v", req, err)
		}
	}
	eventually(t, "counted", func() bool {
		c := e.status("svc").Counters
		return c.Processed+c.Failed == 5
	})
	if c := e.status("svc").Counters; c.ClientErrors != 2 || c.Failed != 2 || c.Processed != 3 {
		t.Fatalf("counters: got %+v, want 2 client errors (in 3 processed) and 2 failed", c)
	}
	cleanStop(t, stop)
}
