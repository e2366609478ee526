package publisher_test

import (
	"context"
	"errors"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/corral-go/corral/connection"
	"github.com/corral-go/corral/internal/natstest"
	"github.com/corral-go/corral/publisher"
	"github.com/corral-go/corral/supervisor"
)

// run serves p under a tree with a connection supervisor for urls and
// returns the function that stops both.
func run(t *testing.T, urls []string, cfg publisher.Config) (*publisher.Buffered, *natstest.Recorder, func() error) {
	t.Helper()
	return runOn(t, connection.Config{Servers: urls, ReconnectWait: 50 * time.Millisecond,
		MaxReconnectWait: 200 * time.Millisecond}, cfg)
}

// runOn is run with the connection configured by cc.
func runOn(t *testing.T, cc connection.Config, cfg publisher.Config) (*publisher.Buffered, *natstest.Recorder, func() error) {
	t.Helper()
	rec := natstest.NewRecorder()
	events := supervisor.Events{Hook: rec.Hook}
	cc.Events = events
	conn, err := connection.New(cc)
	if err != nil {
		t.Fatal(err)
	}
	cfg.Events = events
	p, err := publisher.New(cfg, conn)
	if err != nil {
		t.Fatal(err)
	}
	tree := supervisor.NewTree("t", events)
	if err := tree.Add("connection", conn, supervisor.Policy{RestartDelay: 10 * time.Millisecond}); err != nil {
		t.Fatal(err)
	}
	if err := tree.Add("publisher", p, cfg.Restart); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- tree.Serve(ctx) }()
	var once sync.Once
	var serveErr error
	stop := func() error {
		once.Do(func() {
			cancel()
			serveErr = <-done
		})
		return serveErr
	}
	t.Cleanup(func() { _ = stop() })
	return p, rec, stop
}

func newStream(t *testing.T, url, name string, subjects ...string) jetstream.Stream {
	t.Helper()
	js := natstest.JetStream(t, url, nats.MaxReconnects(-1), nats.ReconnectWait(50*time.Millisecond))
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	s, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: name, Subjects: subjects})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// contents reads every message of the stream name on the server at url and
// returns how often each payload is stored. It reads on a connection of its
// own, made now: a connection made before the server restarted may not have
// seen it go yet, and a request written to the closed socket is lost (core
// NATS sends at most once), so that the read would wait out its timeout.
func contents(t *testing.T, url, name string) map[string]int {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	s, err := natstest.JetStream(t, url).Stream(ctx, name)
	if err != nil {
		t.Fatal(err)
	}
	cons, err := s.OrderedConsumer(ctx, jetstream.OrderedConsumerConfig{})
	if err != nil {
		t.Fatal(err)
	}
	info, err := s.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]int{}
	for n := uint64(0); n < info.State.Msgs; {
		batch, err := cons.Fetch(int(min(info.State.Msgs-n, 1000)), jetstream.FetchMaxWait(5*time.Second))
		if err != nil {
			t.Fatal(err)
		}
		for m := range batch.Messages() {
			got[string(m.Data())]++
			n++
		}
		if batch.Error() != nil {
			t.Fatal(batch.Error())
		}
	}
	return got
}

func TestPublishesAndConfirms(t *testing.T) {
	t.Parallel()
	srv := natstest.RunServer(t)
	newStream(t, srv.URL(), "ORDERS", "orders.>")
	p, _, stop := run(t, []string{srv.URL()}, publisher.Config{})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	const n = 2000
	futures := make([]*publisher.Future, n)
	for i := range n {
		f, err := p.Publish(ctx, "orders.new", []byte(strconv.Itoa(i)))
		if err != nil {
			t.Fatal(err)
		}
		futures[i] = f
	}
	seqs := map[uint64]bool{}
	for i, f := range futures {
		ack, err := f.Wait(ctx)
		if err != nil {
			t.Fatalf("message %d: %v", i, err)
		}
		if ack.Stream != "ORDERS" || seqs[ack.Sequence] {
			t.Fatalf("message %d: ack %+v", i, ack)
		}
		seqs[ack.Sequence] = true
	}
	ack, err := p.PublishSync(ctx, "orders.new", []byte("sync"))
	if err != nil || ack.Sequence != n+1 {
		t.Fatalf("PublishSync: %+v, %v", ack, err)
	}
	got := contents(t, srv.URL(), "ORDERS")
	if len(got) != n+1 {
		t.Fatalf("stream holds %d distinct messages, want %d", len(got), n+1)
	}
	st := p.Status()
	if st.Published != n+1 || st.Acked != n+1 || st.Buffered != 0 || st.InFlight != 0 || st.Failed != 0 {
		t.Fatalf("status: %+v", st)
	}
	if err := stop(); !errors.Is(err, context.Canceled) {
		t.Fatal(err)
	}
}

func TestMsgIDAndExpectations(t *testing.T) {
	t.Parallel()
	srv := natstest.RunServer(t)
	newStream(t, srv.URL(), "IDS", "ids")
	var undelivered atomic.Int64
	p, rec, _ := run(t, []string{srv.URL()}, publisher.Config{OnUndelivered: func(*nats.Msg, error) { undelivered.Add(1) }})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	first, err := p.PublishSync(ctx, "ids", []byte("a"), publisher.WithMsgID("same"))
	if err != nil {
		t.Fatal(err)
	}
	again, err := p.PublishSync(ctx, "ids", []byte("a"), publisher.WithMsgID("same"))
	if err != nil || !again.Duplicate || again.Sequence != first.Sequence {
		t.Fatalf("second publish with the same id: %+v, %v", again, err)
	}
	if _, err := p.PublishSync(ctx, "ids", []byte("b"), publisher.WithExpectLastSequence(first.Sequence)); err != nil {
		t.Fatalf("expected last sequence %d: %v", first.Sequence, err)
	}
	_, err = p.PublishSync(ctx, "ids", []byte("c"), publisher.WithExpectLastSequence(first.Sequence))
	var apiErr *jetstream.APIError
	if !errors.As(err, &apiErr) || apiErr.ErrorCode != jetstream.JSErrCodeStreamWrongLastSequence {
		t.Fatalf("wrong expected sequence: got %v", err)
	}
	if st := p.Status(); st.Failed != 0 || st.Refused != 1 || st.Retried != 0 || st.Duplicates != 1 {
		t.Fatalf("status: %+v; want the refused expectation counted as Refused, not Failed", st)
	}
	if failed := natstest.All[publisher.PublishFailed](rec); len(failed) > 0 || undelivered.Load() > 0 {
		t.Fatalf("the refused expectation was reported as a failure: %+v, OnUndelivered %d times", failed, undelivered.Load())
	}
}

// NoMsgID sends a message without the generated id (the stream keeps none
// for it), and still sends one the caller set.
func TestNoMsgIDSendsOnlyAGivenID(t *testing.T) {
	t.Parallel()
	srv := natstest.RunServer(t)
	s := newStream(t, srv.URL(), "NOIDS", "noids")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for _, tt := range []struct {
		noMsgID bool
		opts    []publisher.Option
		want    string // "": none; "*": generated
	}{
		{noMsgID: false, want: "*"},
		{noMsgID: true, want: ""},
		{noMsgID: true, opts: []publisher.Option{publisher.WithMsgID("given")}, want: "given"},
	} {
		p, _, stop := run(t, []string{srv.URL()}, publisher.Config{NoMsgID: tt.noMsgID})
		ack, err := p.PublishSync(ctx, "noids", []byte("x"), tt.opts...)
		if err != nil {
			t.Fatal(err)
		}
		_ = stop()
		m, err := s.GetMsg(ctx, ack.Sequence)
		if err != nil {
			t.Fatal(err)
		}
		switch got := m.Header.Get(jetstream.MsgIDHeader); {
		case tt.want == "*" && got == "", tt.want != "*" && got != tt.want:
			t.Errorf("no_msg_id %v, options %d: stored Msg-Id %q, want %q", tt.noMsgID, len(tt.opts), got, tt.want)
		}
	}
}

func TestNoStreamFailsOnceWithoutRetryingForever(t *testing.T) {
	t.Parallel()
	srv := natstest.RunServer(t)
	p, rec, _ := run(t, []string{srv.URL()}, publisher.Config{RetryWait: 10 * time.Millisecond})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	f, err := p.Publish(ctx, "nowhere.at.all", []byte("x"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Wait(ctx); !errors.Is(err, publisher.ErrNoStream) {
		t.Fatalf("got %v, want ErrNoStream", err)
	}
	ev, _ := natstest.WaitFor[publisher.PublishFailed](t, rec, 0, time.Second, nil)
	if !errors.Is(ev.Err, publisher.ErrNoStream) || ev.Subject != "nowhere.at.all" {
		t.Fatalf("event: %+v", ev)
	}
	if st := p.Status(); st.Failed != 1 || st.Retried > 1 || st.Buffered != 0 {
		t.Fatalf("status: %+v: want one failure after at most one retry", st)
	}
}

func TestBufferFull(t *testing.T) {
	t.Parallel()
	// No server is up: nothing drains the buffer.
	srv := natstest.RunServer(t)
	srv.Shutdown()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	t.Run("error", func(t *testing.T) {
		p, _, _ := run(t, []string{srv.URL()}, publisher.Config{BufferMsgs: 10})
		for i := range 10 {
			if _, err := p.Publish(ctx, "full", []byte(strconv.Itoa(i))); err != nil {
				t.Fatal(err)
			}
		}
		for range 3 {
			if _, err := p.Publish(ctx, "full", nil); !errors.Is(err, publisher.ErrBufferFull) {
				t.Fatalf("got %v, want ErrBufferFull", err)
			}
		}
		if st := p.Status(); st.Buffered != 10 || st.Rejected != 3 || st.Published != 10 {
			t.Fatalf("status: %+v", st)
		}
	})
	t.Run("block", func(t *testing.T) {
		p, _, _ := run(t, []string{srv.URL()}, publisher.Config{BufferMsgs: 10, BufferBytes: 1 << 20, OnFull: publisher.Block})
		for range 10 {
			if _, err := p.Publish(ctx, "full", nil); err != nil {
				t.Fatal(err)
			}
		}
		short, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
		defer cancel()
		if _, err := p.Publish(short, "full", nil); !errors.Is(err, publisher.ErrBufferFull) || !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("got %v, want ErrBufferFull once ctx ended", err)
		}
		if st := p.Status(); st.Buffered != 10 || st.Rejected != 1 {
			t.Fatalf("status: %+v", st)
		}
	})
	t.Run("bytes", func(t *testing.T) {
		p, _, _ := run(t, []string{srv.URL()}, publisher.Config{BufferBytes: 1000})
		if _, err := p.Publish(ctx, "full", make([]byte, 600)); err != nil {
			t.Fatal(err)
		}
		if _, err := p.Publish(ctx, "full", make([]byte, 600)); !errors.Is(err, publisher.ErrBufferFull) {
			t.Fatalf("got %v, want ErrBufferFull by bytes", err)
		}
	})
}

func TestBlockedPublishGoesThroughWhenTheServerComesUp(t *testing.T) {
	t.Parallel()
	srv := natstest.RunServer(t)
	newStream(t, srv.URL(), "LATE", "late")
	srv.Shutdown()
	p, _, _ := run(t, []string{srv.URL()}, publisher.Config{BufferMsgs: 5, OnFull: publisher.Block})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var futures []*publisher.Future
	for i := range 5 {
		f, err := p.Publish(ctx, "late", []byte(strconv.Itoa(i)))
		if err != nil {
			t.Fatal(err)
		}
		futures = append(futures, f)
	}
	blocked := make(chan *publisher.Future, 1)
	go func() {
		f, err := p.Publish(ctx, "late", []byte("5"))
		if err != nil {
			t.Error(err)
		}
		blocked <- f
	}()
	srv.Start()
	f := <-blocked
	for _, f := range append(futures, f) {
		if _, err := f.Wait(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if got := contents(t, srv.URL(), "LATE"); len(got) != 6 {
		t.Fatalf("stream holds %v", got)
	}
}

func TestStopReportsEveryUndeliveredMessage(t *testing.T) {
	t.Parallel()
	srv := natstest.RunServer(t)
	srv.Shutdown()
	var mu sync.Mutex
	undelivered := map[string]error{}
	cfg := publisher.Config{Restart: supervisor.Policy{ShutdownTimeout: 300 * time.Millisecond},
		OnUndelivered: func(msg *nats.Msg, err error) {
			if msg.Header.Get(jetstream.MsgIDHeader) == "" {
				t.Errorf("message %s reached the callback without its Msg-Id", msg.Data)
			}
			mu.Lock()
			undelivered[string(msg.Data)] = err
			mu.Unlock()
		}}
	p, rec, stop := run(t, []string{srv.URL()}, cfg)
	ctx := context.Background()
	var futures []*publisher.Future
	for i := range 5 {
		f, err := p.Publish(ctx, "stuck", []byte(strconv.Itoa(i)))
		if err != nil {
			t.Fatal(err)
		}
		futures = append(futures, f)
	}
	if err := stop(); !errors.Is(err, context.Canceled) {
		t.Fatal(err)
	}
	for i, f := range futures {
		if _, err := f.Result(); !errors.Is(err, publisher.ErrStopped) {
			t.Fatalf("future %d: %v", i, err)
		}
		if err := undelivered[strconv.Itoa(i)]; !errors.Is(err, publisher.ErrStopped) {
			t.Fatalf("message %d reached the callback with %v", i, err)
		}
	}
	ev, _ := natstest.WaitFor[publisher.Stopped](t, rec, 0, time.Second, nil)
	if ev.Undelivered != 5 || ev.Spooled {
		t.Fatalf("stopped: %+v", ev)
	}
	if _, err := p.Publish(ctx, "stuck", nil); !errors.Is(err, publisher.ErrStopped) {
		t.Fatalf("publish after stop: %v", err)
	}
}

func TestTooLarge(t *testing.T) {
	t.Parallel()
	srv := natstest.RunServer(t)
	newStream(t, srv.URL(), "BIG", "big")
	p, _, _ := run(t, []string{srv.URL()}, publisher.Config{})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := p.PublishSync(ctx, "big", []byte("fits")); err != nil {
		t.Fatal(err) // also: the publisher has learned the server's limit
	}
	if _, err := p.Publish(ctx, "big", make([]byte, 2<<20)); !errors.Is(err, publisher.ErrTooLarge) {
		t.Fatalf("got %v, want ErrTooLarge", err)
	}
	if _, err := p.Publish(ctx, "not valid", nil); err == nil {
		t.Fatal("an invalid subject was accepted")
	}
}
