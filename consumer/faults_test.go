package consumer_test

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/corral-go/corral/connection"
	"github.com/corral-go/corral/consumer"
	"github.com/corral-go/corral/internal/natstest"
	"github.com/corral-go/corral/stream"
	"github.com/corral-go/corral/supervisor"
)

// instance is a connection supervisor and a consumer supervisor under one
// tree, as a Client runs them.
type instance struct {
	rec  *natstest.Recorder
	sup  *consumer.Group
	stop func() error
}

func startInstance(t *testing.T, urls []string, name string, cfg consumer.Config, h consumer.Handler) *instance {
	t.Helper()
	in := &instance{rec: natstest.NewRecorder()}
	events := supervisor.Events{Hook: in.rec.Hook}
	conn, err := connection.New(connection.Config{Servers: urls, Events: events,
		ReconnectWait: 50 * time.Millisecond, MaxReconnectWait: 200 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	in.sup = consumer.NewGroup(conn, events)
	if err := in.sup.Handle(name, cfg, h); err != nil {
		t.Fatal(err)
	}
	tree := supervisor.NewTree(name, events)
	if err := tree.Add("connection", conn, supervisor.Policy{RestartDelay: 10 * time.Millisecond}); err != nil {
		t.Fatal(err)
	}
	if err := tree.Add("consumers", in.sup, supervisor.Policy{}); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- tree.Serve(ctx) }()
	var once sync.Once
	var serveErr error
	in.stop = func() error {
		once.Do(func() {
			cancel()
			serveErr = <-done
		})
		return serveErr
	}
	t.Cleanup(func() { _ = in.stop() })
	return in
}

func (in *instance) counters() consumer.Counters { return in.sup.Status()[0].Counters }

// faultRun publishes n messages to a fresh work-queue-free stream over
// url, starts a handler, injects fault when a third is processed, and
// checks that every message was processed, with redeliveries bounded. It
// returns what the handler saw, its counters and its events.
type faultRun struct {
	t       *testing.T
	urls    []string
	n       int
	ackWait time.Duration
	stream  jetstream.StreamConfig
	// doubleAck has every ack confirmed, so that the acks a fault loses
	// are counted (AckFailed) rather than unknown.
	doubleAck bool
}

func (f faultRun) run(fault func(got *seen)) (*seen, consumer.Counters, *natstest.Recorder) {
	// The consumer is named after the handler: "faulty".
	t := f.t
	t.Helper()
	pub, err := nats.Connect(strings.Join(f.urls, ","), nats.MaxReconnects(-1), nats.ReconnectWait(50*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	defer pub.Close()
	js, err := jetstream.New(pub)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if _, err := js.CreateStream(ctx, f.stream); err != nil {
		t.Fatal(err)
	}
	for i := range f.n {
		if _, err := js.Publish(ctx, f.stream.Subjects[0], []byte(strconv.Itoa(i))); err != nil {
			t.Fatal(err)
		}
	}
	got := newSeen()
	h := consumer.HandlerFunc(func(ctx context.Context, m *consumer.Msg) error {
		got.add(m)
		time.Sleep(100 * time.Microsecond) // a little work
		return nil
	})
	cfg := consumer.Config{Workers: 4, QueueSize: 16, JetStream: consumer.JetStream{Stream: f.stream.Name, AckWait: f.ackWait, DoubleAck: f.doubleAck}}
	in := startInstance(t, f.urls, "faulty", cfg, h)
	eventually(t, "a third processed", func() bool { return got.unique() >= f.n/3 })
	fault(got)
	recovered := time.Now()
	defer func() { t.Logf("after the fault, the rest took %v", time.Since(recovered)) }()
	natstest.Eventually(t, 60*time.Second, func() bool { return got.unique() >= f.n }, func() string {
		return fmt.Sprintf("processed %d of %d after the fault; missing %v", got.unique(), f.n, first(got.missing(f.n), 10))
	})
	if err := in.stop(); !errors.Is(err, context.Canceled) {
		t.Fatalf("stop: %v", err)
	}
	c := in.counters()
	redelivered := got.total() - f.n
	t.Logf("processed %d unique, %d redelivered; counters %+v", got.unique(), redelivered, c)
	return got, c, in.rec
}

func first(s []int, n int) []int { return s[:min(n, len(s))] }

func TestJetStreamSurvivesKill9(t *testing.T) {
	t.Parallel()
	proc := natstest.StartProcess(t)
	f := faultRun{t: t, urls: []string{proc.URL()}, n: 3000, ackWait: 2 * time.Second,
		stream: jetstream.StreamConfig{Name: "KILL", Subjects: []string{"kill"}}}
	var handledAtKill int
	got, c, rec := f.run(func(got *seen) {
		handledAtKill = got.total()
		proc.Kill()
		// Down for more than three heartbeats: pull requests are presumed
		// lost and asked again meanwhile, and must not pile up.
		time.Sleep(7 * time.Second)
		proc.Start()
	})
	// A killed server forgets the acks it had not yet written to its
	// consumer state, at worst all of them; beyond those, only what the
	// pool held (20) may come again.
	if r := got.total() - f.n; r > handledAtKill+20 {
		t.Fatalf("%d redeliveries, want at most the %d handled before the kill and the 20 held", r, handledAtKill)
	}
	if c.PeakHeld > 20 {
		t.Fatalf("held %d messages at once, more than the pool's 20", c.PeakHeld)
	}
	oneWarningPerEpisode(t, rec)
}

func TestJetStreamSurvivesAPauseOfTwiceTheAckWait(t *testing.T) {
	t.Parallel()
	proc := natstest.StartProcess(t)
	const ackWait = 3 * time.Second
	f := faultRun{t: t, urls: []string{proc.URL()}, n: 3000, ackWait: ackWait,
		stream: jetstream.StreamConfig{Name: "PAUSE", Subjects: []string{"pause"}}}
	got, c, _ := f.run(func(*seen) {
		proc.Pause()
		time.Sleep(2 * ackWait) // the fault itself: the server is stopped this long
		proc.Resume()
	})
	// At most what the pool held (20) can be redelivered after the pause.
	if r := got.total() - f.n; r > 4+16 {
		t.Fatalf("%d redeliveries, want at most the 20 the pool held", r)
	}
	if c.PeakHeld > 20 {
		t.Fatalf("held %d messages at once, more than the pool's 20", c.PeakHeld)
	}
}

func TestJetStreamSurvivesLeaderStepDowns(t *testing.T) {
	t.Parallel()
	cluster := natstest.RunCluster(t, 3)
	urls := strings.Split(cluster.URLs(), ",")
	f := faultRun{t: t, urls: urls, n: 2000, ackWait: 5 * time.Second, doubleAck: true,
		stream: jetstream.StreamConfig{Name: "STEP", Subjects: []string{"step"}, Replicas: 3}}
	got, c, _ := f.run(func(*seen) {
		nc, err := nats.Connect(cluster.URLs())
		if err != nil {
			t.Fatal(err)
		}
		defer nc.Close()
		js, err := jetstream.New(nc)
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		for _, api := range []string{"$JS.API.STREAM.LEADER.STEPDOWN.STEP", "$JS.API.CONSUMER.LEADER.STEPDOWN.STEP.faulty"} {
			before := leader(ctx, t, js, api)
			stepDown := func() {
				t.Helper()
				resp, err := nc.RequestWithContext(ctx, api, nil)
				if err != nil {
					t.Fatalf("%s: %v", api, err)
				}
				if !strings.Contains(string(resp.Data), `"success":true`) {
					t.Fatalf("%s: %s", api, resp.Data)
				}
			}
			stepDown()
			if strings.Contains(api, "CONSUMER") {
				// The consumer's info may still name the leader it had for
				// a while; the stream's is checked below.
				t.Logf("consumer leader was %s, now %s", before, leader(ctx, t, js, api))
				continue
			}
			// On a loaded machine raft may elect the same server again: once
			// a leader has held for a while, it is asked to step down again,
			// until another one leads.
			stepped := time.Now()
			natstest.Eventually(t, 30*time.Second, func() bool {
				after := leader(ctx, t, js, api)
				if after == before && time.Since(stepped) > 2*time.Second {
					t.Logf("%s: %s was elected again; stepping down again", api, before)
					stepDown()
					stepped = time.Now()
				}
				return after != before && after != ""
			}, func() string { return fmt.Sprintf("%s: the leader stayed %s", api, before) })
		}
	})
	// The server confirms an ack of a replicated consumer once it is
	// replicated, so a new leader redelivers only what the pool held (20)
	// and acks never confirmed: sent while no leader took them, or taken
	// by the old one and lost with it. A loaded machine loses more.
	if r := got.total() - f.n; r > 20+int(c.AckFailed) {
		t.Fatalf("%d redeliveries, want at most the 20 the pool held and the %d acks not confirmed", r, c.AckFailed)
	}
	if c.PeakHeld > 20 {
		t.Fatalf("held %d messages at once, more than the pool's 20", c.PeakHeld)
	}
}

// leader is the stream's or the consumer's leader, by the step-down API
// subject it is asked about.
func leader(ctx context.Context, t *testing.T, js jetstream.JetStream, api string) string {
	// Mid-election, a request may go unanswered until its deadline.
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	s, err := js.Stream(ctx, "STEP")
	if err != nil {
		return ""
	}
	if strings.Contains(api, "CONSUMER") {
		cons, err := s.Consumer(ctx, "faulty")
		if err != nil {
			return ""
		}
		info, err := cons.Info(ctx)
		if err != nil || info.Cluster == nil {
			return ""
		}
		return info.Cluster.Leader
	}
	info, err := s.Info(ctx)
	if err != nil || info.Cluster == nil {
		return ""
	}
	return info.Cluster.Leader
}

func TestJetStreamTwoInstancesOneStops(t *testing.T) {
	t.Parallel()
	srv := natstest.RunServer(t)
	pub := connect(t, srv.URL())
	js, err := jetstream.New(pub)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: "SHARED", Subjects: []string{"shared"}, Retention: jetstream.WorkQueuePolicy}); err != nil {
		t.Fatal(err)
	}
	const n = 2000
	for i := range n {
		if _, err := js.Publish(ctx, "shared", []byte(strconv.Itoa(i))); err != nil {
			t.Fatal(err)
		}
	}
	got := newSeen()
	h := consumer.HandlerFunc(func(ctx context.Context, m *consumer.Msg) error {
		got.add(m)
		time.Sleep(200 * time.Microsecond)
		return nil
	})
	cfg := consumer.Config{Workers: 4, QueueSize: 8, JetStream: consumer.JetStream{Stream: "SHARED", Consumer: "workers", AckWait: time.Minute}}
	a := startInstance(t, []string{srv.URL()}, "a", cfg, h)
	b := startInstance(t, []string{srv.URL()}, "b", cfg, h)
	eventually(t, "half processed", func() bool { return got.unique() >= n/2 })
	if err := a.stop(); !errors.Is(err, context.Canceled) {
		t.Fatal(err)
	}
	// The ack wait is a minute: what a held comes back only because it
	// handed it back.
	natstest.Eventually(t, 20*time.Second, func() bool { return got.unique() == n }, func() string {
		info, err := js.Consumer(ctx, "SHARED", "workers")
		var ci *jetstream.ConsumerInfo
		if err == nil {
			ci, _ = info.Info(ctx)
		}
		return fmt.Sprintf("b did not process the rest: %d of %d, missing %v; a %+v; b %+v; consumer %+v",
			got.unique(), n, first(got.missing(n), 10), a.counters(), b.counters(), ci)
	})
	if err := b.stop(); !errors.Is(err, context.Canceled) {
		t.Fatal(err)
	}
	ca, cb := a.counters(), b.counters()
	if ca.Acked+cb.Acked != n || ca.Dropped+cb.Dropped != 0 {
		t.Fatalf("acked %d+%d of %d; counters a %+v b %+v", ca.Acked, cb.Acked, n, ca, cb)
	}
}

func TestHandlerClaimsNATSSlowConsumerErrors(t *testing.T) {
	t.Parallel()
	srv := natstest.RunServer(t)
	gate := make(chan struct{})
	var once sync.Once
	t.Cleanup(func() { once.Do(func() { close(gate) }) })
	h := consumer.HandlerFunc(func(ctx context.Context, m *consumer.Msg) error {
		<-gate
		return nil
	})
	cfg := consumer.Config{Subject: "claimed", Workers: 1, QueueSize: 2, PendingMsgs: 5}
	in := startInstance(t, []string{srv.URL()}, "claimed", cfg, h)
	eventually(t, "subscribed", func() bool { return in.sup.Status()[0].Ready })
	pub := connect(t, srv.URL())
	for range 100 {
		if err := pub.Publish("claimed", nil); err != nil {
			t.Fatal(err)
		}
	}
	if err := pub.Flush(); err != nil {
		t.Fatal(err)
	}
	eventually(t, "nats.go dropped", func() bool { return in.counters().PendingDropped > 0 })
	once.Do(func() { close(gate) })
	eventually(t, "all accounted for", func() bool {
		c := in.counters()
		return c.Processed+c.Dropped == 100
	})
	ended, _ := natstest.WaitFor[consumer.SlowConsumerEnded](t, in.rec, 0, 10*time.Second, nil)
	if err := in.stop(); !errors.Is(err, context.Canceled) {
		t.Fatal(err)
	}
	if n := len(natstest.All[consumer.SlowConsumerStarted](in.rec)); n != 1 {
		t.Fatalf("got %d slow-consumer episodes, want 1", n)
	}
	if n := len(natstest.All[connection.SlowConsumer](in.rec)); n != 0 {
		t.Fatalf("got %d connection slow-consumer events for a handler's subscription, want none", n)
	}
	if ended.Dropped != in.counters().Dropped {
		t.Fatalf("episode dropped %d, counters %+v", ended.Dropped, in.counters())
	}
}

func TestJetStreamRedeclaresADeletedStream(t *testing.T) {
	t.Parallel()
	srv := natstest.RunServer(t)
	got := newSeen()
	h := consumer.HandlerFunc(func(ctx context.Context, m *consumer.Msg) error {
		got.add(m)
		return nil
	})
	cfg := consumer.Config{JetStream: consumer.JetStream{Stream: "EPHEMERAL",
		CreateStream: &stream.Config{Subjects: []string{"eph.>"}}}}
	in := startInstance(t, []string{srv.URL()}, "eph", cfg, h)
	eventually(t, "subscribed", func() bool { return in.sup.Status()[0].Ready })
	pub := connect(t, srv.URL())
	js, err := jetstream.New(pub)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := js.Publish(ctx, "eph.a", []byte("before")); err != nil {
		t.Fatal(err)
	}
	eventually(t, "first", func() bool { return got.unique() == 1 })
	if err := js.DeleteStream(ctx, "EPHEMERAL"); err != nil {
		t.Fatal(err)
	}
	natstest.WaitFor[consumer.ConsumerRecreated](t, in.rec, 0, 20*time.Second, nil)
	if _, err := js.Publish(ctx, "eph.a", []byte("after")); err != nil {
		t.Fatal(err)
	}
	eventually(t, "second", func() bool { return got.unique() == 2 })
	if errs := natstest.All[consumer.ConsumeError](in.rec); len(errs) == 0 {
		t.Fatal("the lost stream was not reported")
	}
	if err := in.stop(); !errors.Is(err, context.Canceled) {
		t.Fatal(err)
	}
}

func TestJetStreamDoubleAck(t *testing.T) {
	t.Parallel()
	srv := natstest.RunServer(t)
	got := newSeen()
	h := consumer.HandlerFunc(func(ctx context.Context, m *consumer.Msg) error {
		got.add(m)
		return nil
	})
	cfg := consumer.Config{Workers: 2, JetStream: consumer.JetStream{Stream: "DOUBLE", DoubleAck: true,
		CreateStream: &stream.Config{Subjects: []string{"double"}}}}
	in := startInstance(t, []string{srv.URL()}, "double", cfg, h)
	eventually(t, "subscribed", func() bool { return in.sup.Status()[0].Ready })
	pub := connect(t, srv.URL())
	js, err := jetstream.New(pub)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for i := range 50 {
		if _, err := js.Publish(ctx, "double", []byte(strconv.Itoa(i))); err != nil {
			t.Fatal(err)
		}
	}
	eventually(t, "all confirmed", func() bool { return in.counters().Acked == 50 })
	cons, err := js.Consumer(ctx, "DOUBLE", "double")
	if err != nil {
		t.Fatal(err)
	}
	info, err := cons.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	// Confirmed acks: the server's ack floor is already past every message.
	if info.AckFloor.Stream != 50 || info.NumAckPending != 0 {
		t.Fatalf("ack floor %d, %d pending; want 50 and 0", info.AckFloor.Stream, info.NumAckPending)
	}
	if err := in.stop(); !errors.Is(err, context.Canceled) {
		t.Fatal(err)
	}
}
