package corral_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/corral-go/corral/internal/natstest"
	"github.com/corral-go/corral/publisher"
)

// A request the publisher would refuse fails at once with its error and
// is never sent: a subject past the server's control line would make it
// close the connection every handler shares.
func TestRequestRefusesWhatThePublisherRefuses(t *testing.T) {
	t.Parallel()
	srv := natstest.RunServer(t)
	c := newOutageClient(t, srv, nil)
	bindEcho(t, c)
	running(t, c)
	ready(t, c)
	echoAnswers(t, c)
	gen := c.ConnectionSupervisor().Status().Generation
	long := "svc." + strings.Repeat("x", 5000)
	bad := []error{publisher.ErrBadSubject, nats.ErrBadSubject}
	for _, tc := range []struct {
		name string
		msg  *nats.Msg
		want []error
	}{
		{"long subject", &nats.Msg{Subject: long, Data: []byte("bad")}, []error{publisher.ErrSubjectTooLong}},
		{"bad header", &nats.Msg{Subject: "svc.echo", Header: nats.Header{"Bad Name": {"v"}}}, []error{publisher.ErrBadHeader}},
		{"wildcard", &nats.Msg{Subject: "svc.*", Data: []byte("bad")}, bad},
		{"full wildcard", &nats.Msg{Subject: "svc.>", Data: []byte("bad")}, bad},
		{"empty token", &nats.Msg{Subject: "svc..echo", Data: []byte("bad")}, bad},
		{"whitespace", &nats.Msg{Subject: "svc echo", Data: []byte("bad")}, bad},
		{"empty subject", &nats.Msg{Data: []byte("bad")}, bad},
		{"nil", nil, []error{publisher.ErrNilMsg}},
	} {
		// A refusal comes before any wait: a request that waited for a
		// reply instead would end with this deadline.
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		_, err := c.RequestMsg(ctx, tc.msg)
		cancel()
		if errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("%s: RequestMsg waited until its deadline: %.200v", tc.name, err)
		}
		for _, want := range tc.want {
			if !errors.Is(err, want) {
				t.Errorf("%s: RequestMsg = %.200v, want %v", tc.name, err, want)
			}
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := c.Request(ctx, long, []byte("bad")); !errors.Is(err, publisher.ErrSubjectTooLong) {
		t.Errorf("Request to a %d-byte subject = %.200v, want ErrSubjectTooLong", len(long), err)
	}
	if _, err := c.Request(ctx, "svc.*", []byte("bad")); !errors.Is(err, publisher.ErrBadSubject) {
		t.Errorf("Request to a wildcard = %v, want ErrBadSubject", err)
	}
	// RequestMsg ignores msg.Reply: nats.go sets its own.
	if _, err := c.RequestMsg(ctx, &nats.Msg{Subject: "svc.echo", Reply: "ignored", Data: []byte("x")}); err != nil {
		t.Errorf("RequestMsg with a Reply: %v", err)
	}
	echoAnswers(t, c)
	connectionKept(t, c, gen)
}
