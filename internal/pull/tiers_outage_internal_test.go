package pull

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/corral-go/corral/internal/natstest"
)

// A consumer deleted while the others are fine is passed over while it is
// gone, declared again through Owner.Redeclare, and pulled from once it
// is back; the others are pulled from throughout.
func TestTiersRedeclareADeletedConsumerAlone(t *testing.T) {
	t.Parallel()
	tr := startTiers(t, tierSetup{capacity: 3})
	tr.waitIdle(t, 3)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := tr.js.DeleteConsumer(ctx, "Q", "c1"); err != nil {
		t.Fatal(err)
	}
	// Declaring fails at first: c1 stays gone a while.
	natstest.Eventually(t, 10*time.Second, func() bool {
		_, _, redeclared := tr.o.accepted()
		return redeclared > 0
	}, func() string { return "the deleted consumer was never declared again" })
	publish(t, tr.js, "q.2", 1)
	publish(t, tr.js, "q.0", 1)
	natstest.Eventually(t, 10*time.Second, func() bool {
		got, _, _ := tr.o.accepted()
		return len(got) == 2
	}, func() string {
		got, _, _ := tr.o.accepted()
		return fmt.Sprintf("accepted %v while c1 was gone, want q.0 and q.2", got)
	})
	tr.o.declare.Store(true)
	natstest.Eventually(t, 10*time.Second, func() bool {
		_, err := tr.js.Consumer(ctx, "Q", "c1")
		return err == nil
	}, func() string { return "c1 was not declared again" })
	publish(t, tr.js, "q.1", 1)
	natstest.Eventually(t, 10*time.Second, func() bool {
		got, _, _ := tr.o.accepted()
		return slices.Contains(got, "q.1")
	}, func() string { return "nothing taken from c1 declared again" })
	deleted := slices.ContainsFunc(tr.o.reported(), func(err error) bool {
		return errors.Is(err, jetstream.ErrConsumerDeleted) && strings.Contains(err.Error(), "c1")
	})
	if !deleted {
		t.Fatalf("reported %v, want c1 deleted", tr.o.reported())
	}
}

// Every request to several consumers ends by Config.Until: a probe is
// answered at once (no_wait, no expiry), a doorbell expires by Until with
// heartbeats the server accepts, and none is sent once too little is
// left.
func TestTieredRequestsEndByUntil(t *testing.T) {
	t.Parallel()
	var (
		mu       sync.Mutex
		requests []request
	)
	const lease = 1500 * time.Millisecond
	var until time.Time
	tr := startTiers(t, tierSetup{capacity: 5, config: Config{Until: func() time.Time { return until }}, prepare: func(ctx context.Context, js jetstream.JetStream) {
		spy, err := js.Conn().Subscribe("$JS.API.CONSUMER.MSG.NEXT.Q.>", func(m *nats.Msg) {
			mu.Lock()
			defer mu.Unlock()
			requests = append(requests, request{at: time.Now(), subject: m.Subject, body: m.Data})
		})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = spy.Unsubscribe() })
		if err := js.Conn().Flush(); err != nil {
			t.Fatal(err)
		}
		until = time.Now().Add(lease) // before the session starts
	}})
	tr.waitIdle(t, 3)
	// A doorbell that outlived Until would wait for ten seconds: once
	// Until has passed, none is waiting within a second and a quarter.
	natstest.Eventually(t, time.Until(until)+1250*time.Millisecond, func() bool {
		if time.Now().Before(until) {
			return false
		}
		for _, name := range tierNames {
			cons, err := tr.js.Consumer(context.Background(), "Q", name)
			if err != nil || cons.CachedInfo().NumWaiting != 0 {
				return false
			}
		}
		return true
	}, func() string { return "a request outlived Until" })
	mu.Lock()
	defer mu.Unlock()
	var probes, doorbells int
	for _, r := range requests {
		var req pullRequest
		if err := json.Unmarshal(r.body, &req); err != nil {
			t.Fatal(err)
		}
		switch {
		case !r.at.Before(until):
			t.Errorf("a request to %s %v after Until", r.subject, r.at.Sub(until))
		case req.NoWait:
			probes++
			if req.Expires != 0 || req.Heartbeat != 0 {
				t.Errorf("probe %s to %s: want no expiry, for an answer at once", r.body, r.subject)
			}
		default:
			doorbells++
			if req.Batch != 1 || req.Expires > lease || req.Heartbeat <= 0 || 2*req.Heartbeat > req.Expires {
				t.Errorf("doorbell %s to %s: want one message within the lease, heartbeats at most half its expiry",
					r.body, r.subject)
			}
		}
	}
	if probes < len(tierNames) || doorbells < len(tierNames) {
		t.Fatalf("saw %d probes and %d doorbells, want one of each per consumer at least", probes, doorbells)
	}
}

// With one consumer in Consumers, the requests are those of Consumer:
// for the whole room, waiting, with heartbeats.
func TestOneOfConsumersAsksAsConsumer(t *testing.T) {
	t.Parallel()
	srv := natstest.RunServer(t)
	nc := connectInternal(t, srv.URL())
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	declareTestConsumer(t, ctx, nc)
	spy, err := nc.SubscribeSync("$JS.API.CONSUMER.MSG.NEXT.S.h")
	if err != nil {
		t.Fatal(err)
	}
	if err := nc.Flush(); err != nil {
		t.Fatal(err)
	}
	var bodies []string
	for _, cfg := range []Config{{}, {Consumers: []string{"h"}}} {
		p := newTestPullerFor(t, nc, cfg, &owner{})
		if cfg.Consumers != nil {
			p = New(Config{Stream: "S", Consumers: cfg.Consumers, Capacity: 5, Source: p.cfg.Source, Feed: p.cfg.Feed}, &owner{})
		}
		s, err := p.Open(nc)
		if err != nil {
			t.Fatal(err)
		}
		if err := s.request(time.Now()); err != nil {
			t.Fatal(err)
		}
		m, err := spy.NextMsg(10 * time.Second)
		if err != nil {
			t.Fatal(err)
		}
		bodies = append(bodies, string(m.Data))
		s.Drain(time.Time{})
	}
	if want := `{"batch":5,"expires":10000000000,"idle_heartbeat":2000000000}`; bodies[0] != want || bodies[1] != want {
		t.Fatalf("requests %q, want both %s", bodies, want)
	}
}

// request is a pull request the spy saw.
type request struct {
	at      time.Time
	subject string
	body    []byte
}
