package publisher_test

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/corral-go/corral/connection"
	"github.com/corral-go/corral/internal/natstest"
	"github.com/corral-go/corral/publisher"
	"github.com/corral-go/corral/supervisor"
)

// until polls cond every few milliseconds until it holds or ctx ends.
func until(t *testing.T, ctx context.Context, what string, cond func() bool) {
	t.Helper()
	timeout := 30 * time.Second
	if d, ok := ctx.Deadline(); ok {
		timeout = time.Until(d)
	}
	natstest.Eventually(t, timeout, cond, func() string { return "waiting for " + what })
}

// undelivered collects what reaches OnUndelivered.
type undelivered struct {
	mu   sync.Mutex
	msgs []*nats.Msg
	errs []error
}

func (u *undelivered) add(m *nats.Msg, err error) {
	u.mu.Lock()
	defer u.mu.Unlock()
	u.msgs, u.errs = append(u.msgs, m), append(u.errs, err)
}

func (u *undelivered) len() int {
	u.mu.Lock()
	defer u.mu.Unlock()
	return len(u.msgs)
}

// A message stored on its first send, whose ack is lost, is sent again;
// the server refuses the re-send for its expected sequence (it checks that
// before the Msg-Id). The publisher finds it in the stream: a duplicate,
// not a failure.
func TestExpectedSequenceReSendIsADuplicate(t *testing.T) {
	t.Parallel()
	srv := natstest.RunServer(t)
	s := newStream(t, srv.URL(), "EXP", "exp")
	px := natstest.NewProxy(t, srv.URL())
	p, _, _ := run(t, []string{px.URL()}, publisher.Config{AckTimeout: 200 * time.Millisecond, RetryWait: 10 * time.Millisecond})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := p.PublishSync(ctx, "exp", []byte("first")); err != nil {
		t.Fatal(err)
	}
	px.Pause()
	f, err := p.Publish(ctx, "exp", []byte("second"), publisher.WithExpectLastSequence(1))
	if err != nil {
		t.Fatal(err)
	}
	until(t, ctx, "the first send to time out", func() bool { return p.Status().Retried > 0 })
	px.Restore()
	ack, err := f.Wait(ctx)
	if err != nil {
		t.Fatalf("a stored message reported as %v", err)
	}
	if !ack.Duplicate || ack.Sequence != 2 || ack.Stream != "EXP" {
		t.Fatalf("ack %+v, want a duplicate of sequence 2", ack)
	}
	info, err := s.Info(ctx)
	if err != nil || info.State.Msgs != 2 {
		t.Fatalf("stream: %+v, %v", info.State, err)
	}
	if st := p.Status(); st.Failed != 0 || st.Acked != 2 {
		t.Fatalf("status %+v", st)
	}
}

// A publish nothing acknowledges (a core subscriber takes it and never
// answers) ends after max_attempts ack timeouts.
func TestMaxAttemptsEndsWhatIsNeverAcknowledged(t *testing.T) {
	t.Parallel()
	srv := natstest.RunServer(t)
	nc, err := nats.Connect(srv.URL())
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	if _, err := nc.Subscribe("void.>", func(*nats.Msg) {}); err != nil {
		t.Fatal(err)
	}
	if err := nc.Flush(); err != nil {
		t.Fatal(err)
	}
	p, err := publisher.New(publisher.Config{AckTimeout: 100 * time.Millisecond, RetryWait: 10 * time.Millisecond,
		MaxRetryWait: 20 * time.Millisecond, MaxAttempts: 3}, connection.NewFixed(nc))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	sctx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- p.Serve(sctx) }()
	defer func() { stop(); <-done }()
	f, err := p.Publish(ctx, "void.x", []byte("no"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Wait(ctx); !errors.Is(err, publisher.ErrGaveUp) || !errors.Is(err, jetstream.ErrAsyncPublishTimeout) {
		t.Fatalf("got %v, want ErrGaveUp after ack timeouts", err)
	}
	if st := p.Status(); st.Retried != 3 || st.Failed != 1 {
		t.Fatalf("status %+v, want 3 failed sends and one failure", st)
	}
}

// Messages sent and not acknowledged when the stop comes are reported as
// perhaps stored, with their Msg-Id, so they can be published again
// without a duplicate.
func TestStopWithMessagesInFlight(t *testing.T) {
	t.Parallel()
	srv := natstest.RunServer(t)
	newStream(t, srv.URL(), "FLY", "fly")
	px := natstest.NewProxy(t, srv.URL())
	var u undelivered
	p, rec, stop := runOn(t, connection.Config{Servers: []string{px.URL()}, DrainTimeout: 200 * time.Millisecond},
		publisher.Config{AckTimeout: time.Minute, OnUndelivered: u.add,
			// The connection closes (drain timeout) well within the flush.
			Restart: supervisor.Policy{ShutdownTimeout: time.Second}})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := p.PublishSync(ctx, "fly", []byte("warm")); err != nil {
		t.Fatal(err)
	}
	px.Pause()
	const n = 10
	var futures []*publisher.Future
	for i := range n {
		f, err := p.Publish(ctx, "fly", []byte(strconv.Itoa(i)))
		if err != nil {
			t.Fatal(err)
		}
		futures = append(futures, f)
	}
	until(t, ctx, "all in flight", func() bool { return p.Status().InFlight == n })
	if err := stop(); !errors.Is(err, context.Canceled) {
		t.Fatal(err)
	}
	for i, f := range futures {
		_, err := f.Result()
		if !errors.Is(err, publisher.ErrStopped) || !errors.Is(err, publisher.ErrMaybeStored) || strings.Count(err.Error(), "publisher: ") != 1 {
			t.Fatalf("future %d: %v, want ErrStopped and ErrMaybeStored, saying publisher: once", i, err)
		}
	}
	if u.len() != n {
		t.Fatalf("OnUndelivered got %d, want %d", u.len(), n)
	}
	seen := map[string]bool{}
	for _, m := range u.msgs {
		if m.Header.Get(jetstream.MsgIDHeader) == "" {
			t.Fatalf("undelivered %q without its Msg-Id", m.Data)
		}
		seen[string(m.Data)] = true
	}
	if len(seen) != n {
		t.Fatalf("OnUndelivered got %d distinct messages, want %d", len(seen), n)
	}
	ev, _ := natstest.WaitFor[publisher.Stopped](t, rec, 0, time.Second, nil)
	if st := p.Status(); ev.Undelivered != n || st.Undelivered != n || st.Buffered != 0 {
		t.Fatalf("stopped %+v, status %+v", ev, st)
	}
}

// A publisher stopped with messages in its spool is served again: it
// sends them, and takes new ones.
func TestServeAgainAfterAStop(t *testing.T) {
	t.Parallel()
	srv := natstest.RunServer(t)
	newStream(t, srv.URL(), "AGAIN", "again")
	srv.Shutdown()
	rec := natstest.NewRecorder()
	events := supervisor.Events{Hook: rec.Hook}
	conn, err := connection.New(connection.Config{Servers: []string{srv.URL()}, Events: events,
		ReconnectWait: 20 * time.Millisecond, MaxReconnectWait: 50 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	p, err := publisher.New(publisher.Config{SpoolDir: t.TempDir(), Events: events,
		Restart: supervisor.Policy{ShutdownTimeout: 200 * time.Millisecond}}, conn)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cctx, cstop := context.WithCancel(ctx)
	cdone := make(chan error, 1)
	go func() { cdone <- conn.Serve(cctx) }()
	defer func() { cstop(); <-cdone }()

	serve := func() func() error {
		sctx, stop := context.WithCancel(ctx)
		done := make(chan error, 1)
		go func() { done <- p.Serve(sctx) }()
		return func() error { stop(); return <-done }
	}
	stop := serve()
	var futures []*publisher.Future
	for i := range 5 {
		f, err := p.Publish(ctx, "again", []byte(strconv.Itoa(i)))
		if err != nil {
			t.Fatal(err)
		}
		futures = append(futures, f)
	}
	if err := stop(); !errors.Is(err, context.Canceled) {
		t.Fatalf("first serve: %v", err)
	}
	for i, f := range futures {
		if _, err := f.Result(); !errors.Is(err, publisher.ErrStopped) || !errors.Is(err, publisher.ErrSpooled) || strings.Count(err.Error(), "publisher: ") != 1 {
			t.Fatalf("future %d: %v, want ErrStopped and ErrSpooled, saying publisher: once", i, err)
		}
	}
	if _, err := p.Publish(ctx, "again", nil); !errors.Is(err, publisher.ErrStopped) {
		t.Fatalf("publish while stopped: %v", err)
	}

	srv.Start()
	stop = serve()
	until(t, ctx, "the spooled messages to be stored", func() bool { return p.Status().Acked == 5 })
	if _, err := p.PublishSync(ctx, "again", []byte("5")); err != nil {
		t.Fatal(err)
	}
	if err := stop(); !errors.Is(err, context.Canceled) {
		t.Fatalf("second serve: %v", err)
	}
	got := contents(t, srv.URL(), "AGAIN")
	for i := range 6 {
		if got[strconv.Itoa(i)] != 1 {
			t.Fatalf("stream holds %v", got)
		}
	}
	ev, _ := natstest.WaitFor[publisher.SpoolRecovered](t, rec, 0, time.Second, nil)
	if ev.Messages != 5 {
		t.Fatalf("recovered %+v", ev)
	}
}

// An application closes the connection it gave the publisher: Serve fails
// (the tree restarts it with backoff) instead of spinning, and Close
// reports what is left.
func TestClosedFixedConnectionFailsServe(t *testing.T) {
	t.Parallel()
	srv := natstest.RunServer(t)
	newStream(t, srv.URL(), "FX", "fx")
	nc, err := nats.Connect(srv.URL())
	if err != nil {
		t.Fatal(err)
	}
	var u undelivered
	p, err := publisher.New(publisher.Config{OnUndelivered: u.add}, connection.NewFixed(nc))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- p.Serve(ctx) }()
	if _, err := p.PublishSync(ctx, "fx", []byte("a")); err != nil {
		t.Fatal(err)
	}
	nc.Close()
	f, err := p.Publish(ctx, "fx", []byte("b"))
	if err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		if !errors.Is(err, nats.ErrConnectionClosed) {
			t.Fatalf("Serve: %v, want ErrConnectionClosed", err)
		}
	case <-ctx.Done():
		t.Fatal("Serve kept running on a closed connection")
	}
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := f.Result(); !errors.Is(err, publisher.ErrStopped) {
		t.Fatalf("future: %v", err)
	}
	if u.len() != 1 || string(u.msgs[0].Data) != "b" {
		t.Fatalf("OnUndelivered got %v", u.msgs)
	}
}

// A stop that races nats.go failing every in-flight publish (the
// connection is cut just before) leaves no message unsettled: each Future
// is done, the counts add up, and each undelivered message reached
// OnUndelivered.
//
// The claim is about what the stop settles, not how fast: the test waits
// for the publisher's own ChildStopped (its Serve has returned, so stop
// has reported everything) rather than for the tree's verdict. The cut
// proxy refuses reconnects, so the flush always runs its whole grace
// (1.35s) and the tree then allows the rest of the shutdown timeout, a
// tenth (150ms), for the stop to notice its cancel, wake from the flush,
// report 1000 messages and return. That tenth is a bet on scheduling,
// not a contract of the publisher: under -race on this 2-core machine at
// load 7-10, Serve was seen noticing the cancel 600ms late, the flush
// waking 390ms past its deadline and the report taking 120ms, and the
// tree then named the publisher unstopped (11 runs in 20). No tenth is
// safe from that, and a longer timeout only makes every round wait its
// grace; how long a stop may take is the supervisor's contract, tested
// there.
func TestStopRacingALostConnectionSettlesEverything(t *testing.T) {
	t.Parallel()
	srv := natstest.RunServer(t)
	newStream(t, srv.URL(), "RACE", "race")
	for round := range 3 {
		px := natstest.NewProxy(t, srv.URL())
		var u undelivered
		p, rec, stop := runOn(t, connection.Config{Servers: []string{px.URL()}, DrainTimeout: 100 * time.Millisecond,
			ReconnectWait: 10 * time.Millisecond, MaxReconnectWait: 10 * time.Millisecond},
			publisher.Config{OnUndelivered: u.add, Restart: supervisor.Policy{ShutdownTimeout: 1500 * time.Millisecond}})
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		if _, err := p.PublishSync(ctx, "race", []byte("warm")); err != nil {
			t.Fatal(err)
		}
		// Held by the proxy, the messages stay in flight until the cut: if
		// the stream acknowledged them all between two looks, there would
		// be nothing in flight to wait for.
		px.Pause()
		var futures []*publisher.Future
		for i := range 1000 {
			f, err := p.Publish(ctx, "race", []byte(strconv.Itoa(i)))
			if err != nil {
				t.Fatal(err)
			}
			futures = append(futures, f)
		}
		until(t, ctx, "messages in flight", func() bool { return p.Status().InFlight > 0 })
		px.Cut()
		// A clean stop, or one the tree judged late (see above): either
		// way ctx's end, and no other failure.
		if err := stop(); !errors.Is(err, context.Canceled) {
			t.Fatalf("round %d: stop: %v", round, err)
		}
		// The real end of the stop, however long the machine took; the
		// timeout only keeps a hung stop from hanging the test.
		natstest.WaitFor(t, rec, 0, 30*time.Second, func(s supervisor.ChildStopped) bool { return s.Child == "publisher" })
		for i, f := range futures {
			select {
			case <-f.Done():
			default:
				t.Fatalf("round %d: message %d never settled; status %+v", round, i, p.Status())
			}
		}
		st := p.Status()
		if st.Buffered != 0 || st.Acked+st.Failed+st.Undelivered != st.Published {
			t.Fatalf("round %d: status %+v: acked+failed+undelivered != published", round, st)
		}
		if got := uint64(u.len()); got != st.Failed+st.Undelivered {
			t.Fatalf("round %d: OnUndelivered got %d, want %d", round, got, st.Failed+st.Undelivered)
		}
		t.Logf("round %d: %+v", round, st)
		cancel()
	}
}
