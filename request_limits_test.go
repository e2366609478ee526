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
	gen := c.Connection().Status().Generation
	long := "svc." + strings.Repeat("x", 5000)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	start := time.Now()
	if _, err := c.Request(ctx, long, []byte("bad")); !errors.Is(err, publisher.ErrSubjectTooLong) {
		t.Errorf("Request to a %d-byte subject = %.200v, want ErrSubjectTooLong", len(long), err)
	}
	_, err := c.RequestMsg(ctx, &nats.Msg{Subject: "svc.echo", Header: nats.Header{"Bad Name": {"v"}}})
	if !errors.Is(err, publisher.ErrBadHeader) {
		t.Errorf("RequestMsg with a header name nats.go cannot encode = %v, want ErrBadHeader", err)
	}
	// RequestMsg ignores msg.Reply: nats.go sets its own.
	if _, err := c.RequestMsg(ctx, &nats.Msg{Subject: "svc.echo", Reply: "ignored", Data: []byte("x")}); err != nil {
		t.Errorf("RequestMsg with a Reply: %v", err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("the refusals took %v, want them at once", d)
	}
	echoAnswers(t, c)
	connectionKept(t, c, gen)
}
