package pull

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/corral-go/corral/connection"
	"github.com/corral-go/corral/internal/natstest"
)

// owner takes whatever arrives.
type owner struct{ accepted atomic.Int64 }

func (o *owner) Accept(*nats.Conn, *nats.Msg) bool                    { o.accepted.Add(1); return true }
func (o *owner) Refuse(*nats.Conn, *nats.Msg)                         {}
func (o *owner) Redeclare(context.Context, jetstream.JetStream) error { return nil }
func (o *owner) Failed(error)                                         {}
func (o *owner) Full(time.Duration) time.Duration                     { return time.Hour }

// newTestPuller is a puller of consumer h of stream S with room for five,
// whose inboxes feed nothing.
func newTestPuller(t *testing.T, nc *nats.Conn) *Puller {
	t.Helper()
	return newTestPullerFor(t, nc, Config{}, &owner{})
}

// newTestPullerFor is newTestPuller with cfg's other fields, for o.
func newTestPullerFor(t *testing.T, nc *nats.Conn, cfg Config, o Owner) *Puller {
	t.Helper()
	cfg.Stream, cfg.Consumer, cfg.Capacity, cfg.Source = "S", "h", 5, connection.NewFixed(nc)
	cfg.Feed = func(sub *nats.Subscription) <-chan struct{} {
		ended := make(chan struct{})
		var once sync.Once
		sub.SetClosedHandler(func(string) { once.Do(func() { close(ended) }) })
		return ended
	}
	return New(cfg, o)
}

func TestDrainDoesNotWaitForAClosedConnection(t *testing.T) {
	t.Parallel()
	srv := natstest.RunServer(t)
	nc, err := nats.Connect(srv.URL())
	if err != nil {
		t.Fatal(err)
	}
	p := newTestPuller(t, nc)
	in, err := p.openInbox(nc)
	if err != nil {
		t.Fatal(err)
	}
	nc.Close() // replaced: nothing more can arrive
	drained := make(chan struct{})
	go func() {
		defer close(drained)
		// A stop whose grace would outlast the test: only the inbox's end
		// lets the drain return.
		p.drainInboxes(nc, []*inbox{in}, time.Now().Add(time.Hour))
	}()
	select {
	case <-drained:
	case <-time.After(20 * time.Second):
		t.Fatal("draining the inbox of a closed connection waited for the stop's deadline")
	}
}

func TestRetiredInboxLeavesTheNewOnesCreditsAlone(t *testing.T) {
	t.Parallel()
	srv := natstest.RunServer(t)
	nc := connectInternal(t, srv.URL())
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	js, _ := declareTestConsumer(t, ctx, nc)
	if _, err := js.Publish(ctx, "s", []byte("late")); err != nil {
		t.Fatal(err)
	}

	p := newTestPuller(t, nc)
	old, err := p.openInbox(nc)
	if err != nil {
		t.Fatal(err)
	}
	// A request for three on the old inbox, which is then replaced (as
	// when its requests are presumed lost) and the room asked for again.
	req, err := json.Marshal(pullRequest{Batch: 3, Expires: 500 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	old.credits.Store(3)
	fresh, err := p.openInbox(nc)
	if err != nil {
		t.Fatal(err)
	}
	old.retired.Store(true)
	fresh.credits.Store(3)
	// The old request delivers after all: one message, then its end,
	// which owed the other two.
	if err := nc.PublishRequest("$JS.API.CONSUMER.MSG.NEXT.S.h", old.subject, req); err != nil {
		t.Fatal(err)
	}
	natstest.Eventually(t, 20*time.Second, func() bool { return old.credits.Load() == 0 }, func() string {
		return fmt.Sprintf("the old inbox has %d credits left, want none", old.credits.Load())
	})
	if got := fresh.credits.Load(); got != 3 {
		t.Fatalf("the new inbox's credits: got %d, want the 3 its own requests asked for", got)
	}
	if got := p.Held(); got != 1 {
		t.Fatalf("held: got %d, want the late message", got)
	}
	select {
	case err := <-p.status:
		t.Fatalf("the end of an old request reached the puller: %v", err)
	default:
	}
}

func TestRetiredInboxesAreDroppedOnceEnded(t *testing.T) {
	t.Parallel()
	srv := natstest.RunServer(t)
	nc := connectInternal(t, srv.URL())
	p := newTestPuller(t, nc)
	var inboxes []*inbox
	for range 3 {
		in, err := p.openInbox(nc)
		if err != nil {
			t.Fatal(err)
		}
		inboxes = append(inboxes, in)
	}
	for _, in := range inboxes[:2] {
		if err := in.sub.Drain(); err != nil {
			t.Fatal(err)
		}
	}
	for _, in := range inboxes[:2] {
		select {
		case <-in.ended:
		case <-time.After(20 * time.Second):
			t.Fatal("a drained inbox never ended")
		}
	}
	subscribed := inboxes[2]
	if got := live(inboxes); len(got) != 1 || got[0] != subscribed {
		t.Fatalf("live inboxes: got %d, want the one still subscribed", len(got))
	}
}

// declareTestConsumer declares stream S on subject s and its durable
// consumer h, which newTestPuller pulls from.
func declareTestConsumer(t *testing.T, ctx context.Context, nc *nats.Conn) (jetstream.JetStream, jetstream.Consumer) {
	t.Helper()
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: "S", Subjects: []string{"s"}}); err != nil {
		t.Fatal(err)
	}
	cons, err := js.CreateConsumer(ctx, "S", jetstream.ConsumerConfig{Durable: "h", AckPolicy: jetstream.AckExplicitPolicy})
	if err != nil {
		t.Fatal(err)
	}
	return js, cons
}

func connectInternal(t *testing.T, url string) *nats.Conn {
	t.Helper()
	nc, err := nats.Connect(url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	return nc
}

// Each delivered message counts toward the size expected of the next,
// which bounds what the puller asks for: a larger one at once, a smaller
// one by a 64th of the estimate; statuses not at all.
func TestReceiveMeasuresMessageSizes(t *testing.T) {
	p := newTestPuller(t, nil)
	in := &inbox{}
	p.receive(nil, in, &nats.Msg{Subject: "s.1", Data: make([]byte, 997)})
	p.receive(nil, in, &nats.Msg{Subject: "s.2", Data: make([]byte, 1997)})
	p.receive(nil, in, &nats.Msg{Subject: "_INBOX.x", Header: nats.Header{"Status": []string{"100"}}})
	if got := p.sizes.expected(); got != 2000 {
		t.Fatalf("expected size %d after 1000 and 2000 bytes, want 2000", got)
	}
	p.receive(nil, in, &nats.Msg{Subject: "s.3", Data: make([]byte, 97)})
	if got := p.sizes.expected(); got != 2000-2000/64 {
		t.Fatalf("expected size %d after a 100-byte message, want %d", got, 2000-2000/64)
	}
}

// streamS runs a server with the stream S of subject s, and returns a
// connection to it and a ctx that bounds the test.
func streamS(t *testing.T) (*nats.Conn, jetstream.JetStream, context.Context) {
	t.Helper()
	nc := connectInternal(t, natstest.RunServer(t).URL())
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	t.Cleanup(cancel)
	if _, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: "S", Subjects: []string{"s"}}); err != nil {
		t.Fatal(err)
	}
	return nc, js, ctx
}
