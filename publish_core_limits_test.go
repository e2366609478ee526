package corral_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/corral-go/corral"
	"github.com/corral-go/corral/internal/subject"
	"github.com/corral-go/corral/publisher"
)

// echoAnswers fails t unless the echo handler bindEcho bound on c answers
// a request: the connection every handler shares still works.
func echoAnswers(t *testing.T, c *corral.Client) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	reply, err := c.Request(ctx, "svc.echo", []byte("still here"))
	if err != nil || string(reply.Data) != "STILL HERE" {
		t.Fatalf("the echo handler after the refused messages: %v, want its reply", err)
	}
}

// connectionKept fails t if c's connection was replaced or reconnected
// since gen.
func connectionKept(t *testing.T, c *corral.Client, gen uint64) {
	t.Helper()
	if st := c.ConnectionSupervisor().Status(); st.Generation != gen || st.Stats.Reconnects != 0 {
		t.Errorf("connection generation %d with %d reconnects (last error %q), want generation %d and none",
			st.Generation, st.Stats.Reconnects, st.LastError, gen)
	}
}

// A core publish the buffered publisher would refuse is refused at once
// with its errors, never sent: a subject past the server's control line
// would make it close the connection every handler shares.
func TestPublishCoreRefusesWhatThePublisherRefuses(t *testing.T) {
	t.Parallel()
	srv := coreStoreServer(t)
	c := newOutageClient(t, srv, nil)
	bindEcho(t, c)
	running(t, c)
	ready(t, c)
	echoAnswers(t, c)
	gen := c.ConnectionSupervisor().Status().Generation
	long := "core." + strings.Repeat("x", 5000)
	bad := []error{publisher.ErrBadSubject, nats.ErrBadSubject}
	for _, tc := range []struct {
		name string
		msg  *nats.Msg
		want []error
	}{
		{"long subject", &nats.Msg{Subject: long, Data: []byte("bad")}, []error{publisher.ErrSubjectTooLong, subject.ErrTooLong}},
		{"long reply", &nats.Msg{Subject: "core.ok", Reply: long, Data: []byte("bad")}, []error{publisher.ErrSubjectTooLong, subject.ErrTooLong}},
		{"bad header", &nats.Msg{Subject: "core.ok", Header: nats.Header{"Bad:Name": {"v"}}, Data: []byte("bad")}, []error{publisher.ErrBadHeader}},
		{"wildcard", &nats.Msg{Subject: "core.*", Data: []byte("bad")}, bad},
		{"empty token", &nats.Msg{Subject: "core..ok", Data: []byte("bad")}, bad},
		{"whitespace", &nats.Msg{Subject: "core ok", Data: []byte("bad")}, bad},
		{"empty subject", &nats.Msg{Data: []byte("bad")}, bad},
		{"wildcard reply", &nats.Msg{Subject: "core.ok", Reply: "inbox.>", Data: []byte("bad")}, bad},
		{"nil", nil, []error{publisher.ErrNilMsg}},
	} {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		err := c.PublishCoreMsg(ctx, tc.msg)
		cancel()
		for _, want := range tc.want {
			if !errors.Is(err, want) {
				t.Errorf("%s: PublishCoreMsg = %.200v, want %v", tc.name, err, want)
			}
		}
		if err != nil && len(err.Error()) > 200 {
			t.Errorf("%s: an error of %d bytes, want the subject cut short", tc.name, len(err.Error()))
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := c.PublishCore(ctx, long, []byte("bad")); !errors.Is(err, publisher.ErrSubjectTooLong) {
		t.Errorf("PublishCore of a %d-byte subject = %.200v, want ErrSubjectTooLong", len(long), err)
	}
	if err := c.PublishCore(ctx, "core.>", []byte("bad")); !errors.Is(err, publisher.ErrBadSubject) {
		t.Errorf("PublishCore to a wildcard = %v, want ErrBadSubject", err)
	}
	if err := c.PublishCore(ctx, "core.ok", []byte("good")); err != nil {
		t.Fatal(err)
	}
	echoAnswers(t, c) // sent after the others on the same connection
	waitCoreStored(t, srv, "good")
	connectionKept(t, c, gen)
}
