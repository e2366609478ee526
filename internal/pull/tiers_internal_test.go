package pull

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/corral-go/corral/connection"
	"github.com/corral-go/corral/internal/natstest"
)

// openInbox opens an inbox of the first consumer, as the tests of one
// consumer do.
func (p *Puller) openInbox(nc *nats.Conn) (*inbox, error) { return p.openInboxOf(nc, 0) }

// tierNames are the consumers of stream Q, first to last: tierNames[i]
// takes subject q.<i>.
var tierNames = []string{"c0", "c1", "c2"}

// tiered is a running session pulling from the consumers of stream Q for
// a tierOwner.
type tiered struct {
	srv *natstest.Server
	nc  *nats.Conn
	js  jetstream.JetStream
	p   *Puller
	o   *tierOwner
}

// tierOwner takes what arrives and notes its subject; one worker acks and
// releases each, once the gate (if any) is open. It refuses with a nak.
type tierOwner struct {
	failures
	queue chan *nats.Msg
	gate  chan struct{} // closed: the worker may go on; nil: no gate
	pace  time.Duration // how long the worker takes for each message
	js    jetstream.JetStream

	mu         sync.Mutex
	subjects   []string // accepted, in order
	refused    int
	redeclared int
	declare    atomic.Bool // Redeclare declares the consumers
}

func (o *tierOwner) Accept(_ *nats.Conn, msg *nats.Msg) bool {
	o.mu.Lock()
	o.subjects = append(o.subjects, msg.Subject)
	o.mu.Unlock()
	o.queue <- msg // held: within the capacity the queue has room for
	return true
}

func (o *tierOwner) Refuse(_ *nats.Conn, msg *nats.Msg) {
	_ = msg.Nak()
	o.mu.Lock()
	o.refused++
	o.mu.Unlock()
}

func (o *tierOwner) Redeclare(ctx context.Context, js jetstream.JetStream) error {
	o.mu.Lock()
	o.redeclared++
	o.mu.Unlock()
	if o.declare.Load() {
		declareTiers(ctx, js)
	}
	return nil
}

// accepted is the subjects accepted so far, and how many were refused
// and redeclared.
func (o *tierOwner) accepted() (subjects []string, refused, redeclared int) {
	o.mu.Lock()
	defer o.mu.Unlock()
	return slices.Clone(o.subjects), o.refused, o.redeclared
}

// work acks and releases what the owner holds until its queue closes.
func (o *tierOwner) work(p *Puller) {
	for msg := range o.queue {
		if o.gate != nil {
			<-o.gate
		}
		time.Sleep(o.pace)
		_ = msg.Ack()
		p.Release()
	}
}

// declareTiers declares the consumers of Q, leaving those there as they
// are.
func declareTiers(ctx context.Context, js jetstream.JetStream) error {
	for i, name := range tierNames {
		_, err := js.CreateOrUpdateConsumer(ctx, "Q", jetstream.ConsumerConfig{Durable: name,
			FilterSubject: fmt.Sprintf("q.%d", i), AckPolicy: jetstream.AckExplicitPolicy, MaxAckPending: -1})
		if err != nil {
			return err
		}
	}
	return nil
}

// tierSetup says how startTiers sets a test up.
type tierSetup struct {
	capacity int
	config   Config        // beside Stream, Consumers, Capacity, Source and Feed
	pace     time.Duration // how long the worker takes for each message
	gated    bool          // the worker waits for the gate before each
	reprobe  time.Duration // if set, Puller.reprobe
	// prepare, if set, runs before the session starts, and may publish.
	prepare func(context.Context, jetstream.JetStream)
}

// startTiers runs a server with the work-queue stream Q and its
// consumers, and a session pulling from them as set up. The test's end
// stops it all.
func startTiers(t *testing.T, setup tierSetup) *tiered {
	t.Helper()
	srv := natstest.RunServer(t)
	nc := connectInternal(t, srv.URL())
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	if _, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: "Q", Subjects: []string{"q.*"},
		Retention: jetstream.WorkQueuePolicy}); err != nil {
		t.Fatal(err)
	}
	if err := declareTiers(ctx, js); err != nil {
		t.Fatal(err)
	}
	if setup.prepare != nil {
		setup.prepare(ctx, js)
	}
	o := &tierOwner{queue: make(chan *nats.Msg, setup.capacity), js: js, pace: setup.pace}
	if setup.gated {
		o.gate = make(chan struct{})
	}
	cfg := setup.config
	cfg.Stream, cfg.Consumers, cfg.Capacity, cfg.Source = "Q", tierNames, setup.capacity, connection.NewFixed(nc)
	cfg.Feed = func(sub *nats.Subscription) <-chan struct{} {
		ended := make(chan struct{})
		var once sync.Once
		sub.SetClosedHandler(func(string) { once.Do(func() { close(ended) }) })
		return ended
	}
	p := New(cfg, o)
	if setup.reprobe > 0 {
		p.reprobe = setup.reprobe
	}
	s, err := p.Open(nc)
	if err != nil {
		t.Fatal(err)
	}
	rctx, stop := context.WithCancel(ctx)
	var wg sync.WaitGroup
	wg.Go(func() { o.work(p) })
	done := make(chan error, 1)
	go func() { done <- s.Run(rctx, js, nil) }()
	t.Cleanup(func() {
		stop()
		if err := <-done; err != context.Canceled {
			t.Errorf("the session ended with %v, want it to run until stopped", err)
		}
		s.Drain(time.Time{})
		if o.gate != nil {
			select {
			case <-o.gate:
			default:
				close(o.gate)
			}
		}
		close(o.queue)
		wg.Wait()
	})
	return &tiered{srv: srv, nc: nc, js: js, p: p, o: o}
}

// published waits until each consumer counts the messages published to
// it: the server tells consumers of new messages after it acknowledged
// them, and a probe sent before answers as if there were none.
func published(t *testing.T, ctx context.Context, js jetstream.JetStream, counts ...uint64) {
	t.Helper()
	natstest.Eventually(t, 10*time.Second, func() bool {
		for i, n := range counts {
			cons, err := js.Consumer(ctx, "Q", tierNames[i]) // fetches its info
			if err != nil || cons.CachedInfo().NumPending != n {
				return false
			}
		}
		return true
	}, func() string { return fmt.Sprintf("the consumers do not count %v messages", counts) })
}

// publish publishes n messages to subject.
func publish(t *testing.T, js jetstream.JetStream, subject string, n int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	for i := range n {
		if _, err := js.Publish(ctx, subject, []byte(fmt.Sprint(i))); err != nil {
			t.Fatal(err)
		}
	}
}

// waitIdle waits until the session has a doorbell out on each of the
// first ringing consumers, and none on the others.
func (tr *tiered) waitIdle(t *testing.T, ringing int) {
	t.Helper()
	natstest.Eventually(t, 10*time.Second, func() bool {
		for i, name := range tierNames {
			cons, err := tr.js.Consumer(context.Background(), "Q", name) // fetches its info
			if err != nil || cons.CachedInfo().NumWaiting != min(1, max(0, ringing-i)) {
				return false
			}
		}
		return true
	}, func() string { return fmt.Sprintf("no doorbells out on the first %d consumers alone", ringing) })
}

// A worker with room for two takes every message of the first consumer
// before any of the second, and those before any of the third, whatever
// the order they were published in.
func TestTiersTakeConsumersInOrder(t *testing.T) {
	t.Parallel()
	tr := startTiers(t, tierSetup{capacity: 2, prepare: func(ctx context.Context, js jetstream.JetStream) {
		for _, subject := range []string{"q.2", "q.1", "q.0"} {
			publish(t, js, subject, 10)
		}
		published(t, ctx, js, 10, 10, 10)
	}})
	natstest.Eventually(t, 20*time.Second, func() bool {
		got, _, _ := tr.o.accepted()
		return len(got) == 30
	}, func() string {
		got, _, _ := tr.o.accepted()
		return fmt.Sprintf("accepted %d of 30", len(got))
	})
	got, refused, _ := tr.o.accepted()
	if !slices.IsSorted(got) {
		t.Fatalf("accepted out of the consumers' order: %v", got)
	}
	if refused > 0 {
		t.Fatalf("refused %d with nothing published meanwhile", refused)
	}
}

// A message published to the first consumer while the worker works off
// a backlog of the last is the next it asks for: once c0 counts it, only
// what was asked for before comes from the last.
func TestTiersTakeTheFirstConsumerNextWhileBusy(t *testing.T) {
	t.Parallel()
	const capacity = 2
	tr := startTiers(t, tierSetup{capacity: capacity, pace: 20 * time.Millisecond,
		prepare: func(ctx context.Context, js jetstream.JetStream) {
			publish(t, js, "q.2", 30)
			published(t, ctx, js, 0, 0, 30)
		}})
	natstest.Eventually(t, 10*time.Second, func() bool {
		got, _, _ := tr.o.accepted()
		return len(got) >= 5
	}, func() string { return "the backlog is not being taken" })
	publish(t, tr.js, "q.0", 1)
	// Counted by its consumer (see published), or taken already.
	natstest.Eventually(t, 10*time.Second, func() bool {
		got, _, _ := tr.o.accepted()
		cons, err := tr.js.Consumer(context.Background(), "Q", "c0")
		return slices.Contains(got, "q.0") || err == nil && cons.CachedInfo().NumPending == 1
	}, func() string { return "c0 does not count its message" })
	before, _, _ := tr.o.accepted()
	natstest.Eventually(t, 10*time.Second, func() bool {
		got, _, _ := tr.o.accepted()
		return slices.Contains(got, "q.0")
	}, func() string { return "the message of the first consumer was not taken" })
	got, _, _ := tr.o.accepted()
	if at := slices.Index(got, "q.0"); at > len(before)+capacity {
		t.Fatalf("took %d of the last consumer after the first had one, want at most the %d asked for: %v",
			at-len(before), capacity, got)
	}
}

// A worker idle on doorbells takes a message published to the first
// consumer at once, before a backlog that came first in the last, which
// no doorbell watches while the room is less than the consumers (and
// which, here, no probe looks for meanwhile).
func TestTiersDoorbellBringsTheFirstConsumerFirst(t *testing.T) {
	t.Parallel()
	tr := startTiers(t, tierSetup{capacity: 2, reprobe: time.Hour})
	tr.waitIdle(t, 2)
	publish(t, tr.js, "q.2", 5)
	published := time.Now()
	publish(t, tr.js, "q.0", 1)
	natstest.Eventually(t, time.Second, func() bool {
		got, _, _ := tr.o.accepted()
		return len(got) > 0
	}, func() string { return "nothing taken within a second of the publish" })
	if took := time.Since(published); took > time.Second {
		t.Fatalf("the first message was taken %v after it was published", took)
	}
	natstest.Eventually(t, 20*time.Second, func() bool {
		got, _, _ := tr.o.accepted()
		return len(got) == 6
	}, func() string {
		got, _, _ := tr.o.accepted()
		return fmt.Sprintf("accepted %v, want 6", got)
	})
	if got, _, _ := tr.o.accepted(); got[0] != "q.0" || strings.Count(strings.Join(got, " "), "q.2") != 5 {
		t.Fatalf("accepted %v: want q.0 first, then the five of q.2", got)
	}
}

// Two doorbells that ring at once with room for one: the message beyond
// the room goes back through Refuse, is delivered again and taken; none
// is lost.
func TestTiersRefuseWhatDoorbellsBringBeyondTheRoom(t *testing.T) {
	t.Parallel()
	tr := startTiers(t, tierSetup{capacity: 2, gated: true})
	tr.waitIdle(t, 2)
	// The room shrinks to one with both doorbells out, as a want that
	// halves can make it.
	if !tr.p.held.hold() {
		t.Fatal("no room to take")
	}
	// The second consumer's first: a message of the first withdraws the
	// doorbells below it, the session having no room to see whether more
	// follow.
	publish(t, tr.js, "q.1", 1)
	natstest.Eventually(t, 10*time.Second, func() bool {
		got, _, _ := tr.o.accepted()
		return len(got) == 1
	}, func() string { return "the doorbell of c1 did not ring" })
	publish(t, tr.js, "q.0", 1)
	natstest.Eventually(t, 10*time.Second, func() bool {
		got, refused, _ := tr.o.accepted()
		return len(got) == 1 && refused == 1
	}, func() string {
		got, refused, _ := tr.o.accepted()
		return fmt.Sprintf("accepted %v and refused %d, want one each", got, refused)
	})
	tr.p.Release()
	close(tr.o.gate)
	natstest.Eventually(t, 20*time.Second, func() bool {
		got, _, _ := tr.o.accepted()
		info, err := tr.js.Stream(context.Background(), "Q")
		return len(got) == 2 && err == nil && info.CachedInfo().State.Msgs == 0
	}, func() string {
		got, _, _ := tr.o.accepted()
		return fmt.Sprintf("accepted %v, want both, acked", got)
	})
	if got, _, _ := tr.o.accepted(); !slices.Contains(got, "q.0") || !slices.Contains(got, "q.1") {
		t.Fatalf("accepted %v, want one of each consumer", got)
	}
}

// A backlog on a consumer that no doorbell watches, the room being less
// than the consumers, is found by the probe an idle worker sends once a
// second, and taken.
func TestTiersReprobeFindsAnUnwatchedBacklog(t *testing.T) {
	t.Parallel()
	tr := startTiers(t, tierSetup{capacity: 2})
	tr.waitIdle(t, 2)
	publish(t, tr.js, "q.2", 3)
	natstest.Eventually(t, 3*reprobeEvery, func() bool {
		got, _, _ := tr.o.accepted()
		return len(got) == 3
	}, func() string {
		got, _, _ := tr.o.accepted()
		return fmt.Sprintf("accepted %v, want the three of q.2", got)
	})
}
