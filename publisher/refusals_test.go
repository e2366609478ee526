package publisher_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/corral-go/corral/internal/natstest"
	"github.com/corral-go/corral/publisher"
	"github.com/corral-go/corral/stream"
)

// A header name nats.go cannot encode is refused at Publish, naming it,
// and nothing is buffered: sent, it would fail on every attempt.
func TestBadHeaderNameRefusedAtPublish(t *testing.T) {
	p, err := publisher.New(publisher.Config{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = p.Close() }()
	ctx := context.Background()
	for _, name := range []string{"", "Key:", "a b", "line\r\nbreak", "tab\t", "(x)", "café"} {
		msg := &nats.Msg{Subject: "s", Header: nats.Header{name: {"v"}}}
		if _, err := p.PublishMsg(ctx, msg); !errors.Is(err, publisher.ErrBadHeader) || !strings.Contains(err.Error(), strconv.Quote(name)) {
			t.Errorf("header %q: %v, want ErrBadHeader naming it", name, err)
		}
	}
	ok := &nats.Msg{Subject: "s", Header: nats.Header{"X-Trace_id.1": {"a\r\nb"}}}
	if _, err := p.PublishMsg(ctx, ok); err != nil {
		t.Fatalf("a valid name (a value with CR LF is sent with spaces): %v", err)
	}
	if st := p.Status(); st.Buffered != 1 {
		t.Fatalf("buffered %d, want only the valid message", st.Buffered)
	}
}

// A stream with discard new at a limit refuses a message for good: it
// fails at once with ErrStreamFull and the server's error, not after
// max_attempts retries (71s at the defaults).
func TestStreamFullFailsAtOnce(t *testing.T) {
	t.Parallel()
	srv := natstest.RunServer(t)
	for _, tc := range []struct {
		name string
		cfg  jetstream.StreamConfig
		desc string
	}{
		{"MSGS", jetstream.StreamConfig{MaxMsgs: 1}, "maximum messages exceeded"},
		{"BYTES", jetstream.StreamConfig{MaxBytes: 200}, "maximum bytes exceeded"},
		{"PERSUBJ", jetstream.StreamConfig{MaxMsgsPerSubject: 1, DiscardNewPerSubject: true}, "maximum messages per subject exceeded"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sc := tc.cfg
			sc.Name, sc.Subjects, sc.Discard = tc.name, []string{strings.ToLower(tc.name)}, jetstream.DiscardNew
			declare(t, srv.URL(), sc)
			refused(t, srv.URL(), sc.Subjects[0], 100, jsCode(10077), tc.desc)
		})
	}
}

// The server out of JetStream storage (10023) fails a message at once
// with ErrStreamFull.
func TestServerOutOfStorageFailsAtOnce(t *testing.T) {
	t.Parallel()
	srv := natstest.RunServer(t, func(o *server.Options) { o.JetStreamMaxMemory = 4096 })
	declare(t, srv.URL(), jetstream.StreamConfig{Name: "M", Subjects: []string{"m"}, Storage: jetstream.MemoryStorage})
	refused(t, srv.URL(), "m", 1000, jsCode(10023), "insufficient resources")
}

// The account out of its JetStream storage (10002) fails a message at
// once with ErrStreamFull.
func TestAccountOutOfStorageFailsAtOnce(t *testing.T) {
	t.Parallel()
	conf := filepath.Join(t.TempDir(), "accounts.conf")
	if err := os.WriteFile(conf, []byte(`accounts { A { jetstream { max_mem: 4096, max_file: 1M }, users [{user: a, password: a}] } }
no_auth_user: a
`), 0o600); err != nil {
		t.Fatal(err)
	}
	fo, err := server.ProcessConfigFile(conf)
	if err != nil {
		t.Fatal(err)
	}
	srv := natstest.RunServer(t, func(o *server.Options) { o.Accounts, o.Users, o.NoAuthUser = fo.Accounts, fo.Users, fo.NoAuthUser })
	declare(t, srv.URL(), jetstream.StreamConfig{Name: "M", Subjects: []string{"m"}, Storage: jetstream.MemoryStorage, MaxBytes: -1})
	refused(t, srv.URL(), "m", 1000, jsCode(10002), "resource limits exceeded")
}

type jsCode jetstream.ErrorCode

func declare(t *testing.T, url string, sc jetstream.StreamConfig) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := natstest.JetStream(t, url).CreateStream(ctx, sc); err != nil {
		t.Fatal(err)
	}
}

// refused publishes messages of size bytes to subject until one fails,
// and checks that it failed, without a retry, with ErrStreamFull and the
// server's error code and description.
func refused(t *testing.T, url, subject string, size int, code jsCode, desc string) {
	t.Helper()
	var u undelivered
	p, _, _ := run(t, []string{url}, publisher.Config{OnUndelivered: u.add})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second) // retries would take 71s
	defer cancel()
	for i := range 20 {
		_, err := p.PublishSync(ctx, subject, make([]byte, size))
		if err == nil {
			continue
		}
		var apiErr *jetstream.APIError
		if !errors.Is(err, publisher.ErrStreamFull) || !errors.As(err, &apiErr) ||
			apiErr.ErrorCode != jetstream.ErrorCode(code) || !strings.Contains(err.Error(), desc) {
			t.Fatalf("message %d: %v, want ErrStreamFull with the server's %d %q", i, err, code, desc)
		}
		if st := p.Status(); st.Retried != 0 || st.Failed != 1 || u.len() != 1 {
			t.Fatalf("status %+v, %d undelivered: want one failure, reported, and no retry", st, u.len())
		}
		return
	}
	t.Fatal("the server never refused a message")
}

// A PublishSync caller whose stream cannot be declared gets the
// declaration's error, not only its ctx's end; the message stays buffered.
func TestPublishSyncGetsTheDeclarationError(t *testing.T) {
	t.Parallel()
	srv := natstest.RunServer(t)
	declare(t, srv.URL(), jetstream.StreamConfig{Name: "OTHER", Subjects: []string{"orders.>"}})
	p, _, _ := run(t, []string{srv.URL()}, publisher.Config{
		Streams: map[string]stream.Config{"ORDERS": {Subjects: []string{"orders.>"}}}})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for i := range 2 { // before the first declaration fails, and after
		_, err := p.PublishSync(ctx, "orders.1", []byte("x"))
		var apiErr *jetstream.APIError
		if !errors.Is(err, publisher.ErrNotDeclared) || !errors.As(err, &apiErr) || apiErr.ErrorCode != 10065 {
			t.Fatalf("PublishSync %d: %v, want ErrNotDeclared with the server's 10065", i, err)
		}
	}
	if st := p.Status(); st.Buffered != 2 {
		t.Fatalf("buffered %d, want both messages kept", st.Buffered)
	}
}
