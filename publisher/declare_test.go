package publisher_test

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/corral-go/corral/internal/natstest"
	"github.com/corral-go/corral/publisher"
	"github.com/corral-go/corral/stream"
	"github.com/corral-go/corral/supervisor"
)

// quickRestart restarts the publisher soon after a failed declaration,
// and never pauses for long.
var quickRestart = supervisor.Policy{RestartDelay: 20 * time.Millisecond, Backoff: 200 * time.Millisecond}

// A declaration that fails for a passing reason (here the server has no
// JetStream yet, so no responders) is not a refusal:
// PublishSync keeps waiting for the next declaration rather than send its
// caller to publish again a message that stays buffered, and once
// JetStream is there every message is stored once.
func TestPublishSyncWaitsThroughAPassingDeclarationFailure(t *testing.T) {
	t.Parallel()
	core := natstest.RunServer(t, natstest.WithoutJetStream())
	p, rec, _ := run(t, []string{core.URL()}, publisher.Config{Restart: quickRestart,
		Streams: map[string]stream.Config{"ORDERS": {Subjects: []string{"orders.>"}}}})
	natstest.WaitFor(t, rec, 0, 10*time.Second, func(e supervisor.ChildFailed) bool {
		return strings.HasSuffix(e.Child, "publisher") && errors.Is(e.Err, nats.ErrNoResponders)
	})

	// The declaration has failed: the caller's own deadline ends the wait.
	short, cancelShort := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancelShort()
	if _, err := p.PublishSync(short, "orders.1", []byte("first")); !errors.Is(err, context.DeadlineExceeded) ||
		errors.Is(err, publisher.ErrNotDeclared) {
		t.Fatalf("PublishSync while JetStream is missing: %v, want its ctx's DeadlineExceeded", err)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	type result struct {
		ack *jetstream.PubAck
		err error
	}
	waited := make(chan result, 1)
	go func() {
		ack, err := p.PublishSync(ctx, "orders.2", []byte("second"))
		waited <- result{ack, err}
	}()

	core.Shutdown()
	js := natstest.RunServer(t, natstest.WithPort(core.Port())) // JetStream this time
	r := <-waited
	if r.err != nil || r.ack.Stream != "ORDERS" {
		t.Fatalf("PublishSync across the failed declaration: %+v, %v; want ORDERS's ack", r.ack, r.err)
	}
	storedOnce(t, p, js.URL(), "ORDERS", "first", "second")
}

// Messages buffered while the server refused the declaration are sent,
// each once, when a later declaration succeeds (the overlapping stream
// was removed): the callers told ErrNotDeclared need not publish again.
func TestRefusedDeclarationSendsWhatItBufferedOnceDeclared(t *testing.T) {
	t.Parallel()
	srv := natstest.RunServer(t)
	declare(t, srv.URL(), jetstream.StreamConfig{Name: "OTHER", Subjects: []string{"orders.>"}})
	p, _, _ := run(t, []string{srv.URL()}, publisher.Config{Restart: quickRestart,
		Streams: map[string]stream.Config{"ORDERS": {Subjects: []string{"orders.>"}}}})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for _, data := range []string{"a", "b"} {
		if _, err := p.PublishSync(ctx, "orders.1", []byte(data)); !errors.Is(err, publisher.ErrNotDeclared) {
			t.Fatalf("PublishSync %s: %v, want ErrNotDeclared", data, err)
		}
	}
	js := natstest.JetStream(t, srv.URL())
	if err := js.DeleteStream(ctx, "OTHER"); err != nil {
		t.Fatal(err)
	}
	storedOnce(t, p, srv.URL(), "ORDERS", "a", "b")
}

// storedOnce waits until p has settled everything it buffered, then
// checks that stream holds each of payloads once, and nothing else.
func storedOnce(t *testing.T, p *publisher.Buffered, url, name string, payloads ...string) {
	t.Helper()
	natstest.Eventually(t, 20*time.Second, func() bool { return p.Status().Buffered == 0 },
		func() string { return fmt.Sprintf("never settled: %+v", p.Status()) })
	want := map[string]int{}
	for _, d := range payloads {
		want[d] = 1
	}
	if got := contents(t, url, name); !maps.Equal(got, want) {
		t.Fatalf("%s holds %v, want %v", name, got, want)
	}
	if st := p.Status(); st.Acked != uint64(len(payloads)) || st.Failed != 0 {
		t.Fatalf("status %+v, want %d acked and none failed", st, len(payloads))
	}
}
