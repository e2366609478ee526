package publisher_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/corral-go/corral/connection"
	"github.com/corral-go/corral/internal/natstest"
	"github.com/corral-go/corral/publisher"
)

// permissionsServer runs a server with a stream SEC on secret.> and ok.>,
// and returns the URLs of two users: admin may publish anything, app
// nothing on secret.>.
func permissionsServer(t *testing.T) (admin, app string) {
	t.Helper()
	srv := natstest.RunServer(t, func(o *server.Options) {
		o.Users = []*server.User{
			{Username: "admin", Password: "a"},
			{Username: "app", Password: "b", Permissions: &server.Permissions{
				Publish: &server.SubjectPermission{Allow: []string{"ok.>", "$JS.API.>", "_INBOX.>"}, Deny: []string{"secret.>"}},
			}},
		}
	})
	host := strings.TrimPrefix(srv.URL(), "nats://")
	admin, app = "nats://admin:a@"+host, "nats://app:b@"+host
	newStream(t, admin, "SEC", "secret.>", "ok.>")
	return admin, app
}

// The server refuses a publish only through the connection's async
// errors; the publisher settles the message at once, not after an ack
// timeout, and does not send it again.
func TestPermissionViolationIsFinal(t *testing.T) {
	t.Parallel()
	_, app := permissionsServer(t)
	var u undelivered
	p, _, _ := run(t, []string{app}, publisher.Config{AckTimeout: time.Minute, OnUndelivered: u.add})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second) // < AckTimeout
	defer cancel()
	if _, err := p.PublishSync(ctx, "ok.x", []byte("ok")); err != nil {
		t.Fatal(err)
	}
	f, err := p.Publish(ctx, "secret.x", []byte("no"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Wait(ctx); !errors.Is(err, nats.ErrPermissionViolation) {
		t.Fatalf("got %v, want a permissions violation", err)
	}
	if _, err := p.PublishSync(ctx, "secret.y", []byte("no")); !errors.Is(err, nats.ErrPermissionViolation) {
		t.Fatalf("PublishSync: got %v, want a permissions violation", err)
	}
	if st := p.Status(); st.Failed != 2 || st.Retried != 0 || st.Buffered != 0 {
		t.Fatalf("status %+v", st)
	}
	if u.len() != 2 || u.msgs[0].Subject != "secret.x" || u.msgs[0].Header.Get(jetstream.MsgIDHeader) == "" ||
		!errors.Is(u.errs[0], nats.ErrPermissionViolation) {
		t.Fatalf("OnUndelivered got %v, %v", u.msgs, u.errs)
	}
}

// A connection the application manages reports a refused publish too:
// connection.Fixed hears nats.go's async errors.
func TestFixedConnectionReportsAPermissionViolation(t *testing.T) {
	t.Parallel()
	_, app := permissionsServer(t)
	nc, err := nats.Connect(app, nats.ErrorHandler(func(*nats.Conn, *nats.Subscription, error) {}))
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	p, err := publisher.New(publisher.Config{AckTimeout: time.Minute}, connection.NewFixed(nc))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second) // < AckTimeout
	defer cancel()
	sctx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- p.Serve(sctx) }()
	defer func() { stop(); <-done }()
	f, err := p.Publish(ctx, "secret.x", []byte("no"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Wait(ctx); !errors.Is(err, nats.ErrPermissionViolation) {
		t.Fatalf("got %v, want a permissions violation", err)
	}
	if st := p.Status(); st.Retried != 0 || st.Failed != 1 {
		t.Fatalf("status %+v, want one failure and no retry", st)
	}
}
