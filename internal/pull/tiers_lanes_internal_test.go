package pull

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/corral-go/corral/internal/natstest"
)

// openLanes opens, without running it, a session of the consumers
// tierNames for f, reporting recoveries to recovered.
func openLanes(t *testing.T, f Owner, recovered func()) (*Session, *Puller) {
	t.Helper()
	nc := connectInternal(t, natstest.RunServer(t).URL())
	p := newTestPullerFor(t, nc, Config{Consumers: tierNames, Recovered: recovered}, f)
	s, err := p.Open(nc)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Drain(time.Time{}) })
	s.connChanged = make(chan struct{})
	s.timer = time.NewTimer(time.Hour)
	t.Cleanup(func() { s.timer.Stop() })
	return s, p
}

// inboxes is the current inbox of each lane.
func inboxes(s *Session) []*inbox {
	var ins []*inbox
	for _, l := range s.lanes {
		ins = append(ins, l.in)
	}
	return ins
}

// A leadership change of one consumer loses its requests alone: its
// inbox is replaced, the failure names it, the others keep theirs.
func TestTiersLoseOneConsumersRequestsAlone(t *testing.T) {
	t.Parallel()
	f := &failures{}
	s, p := openLanes(t, f, nil)
	before := inboxes(s)
	lost := &nats.Msg{Subject: before[1].subject, Header: nats.Header{"Status": []string{"409"},
		"Description": []string{"Leadership Change"}}}
	p.receive(s.nc, before[1], lost)
	if err := s.await(context.Background()); err != nil {
		t.Fatal(err)
	}
	after := inboxes(s)
	if after[0] != before[0] || after[1] == before[1] || after[2] != before[2] {
		t.Fatal("want the inbox of c1 replaced, and it alone")
	}
	errs := f.reported()
	if len(errs) != 1 || !errors.Is(errs[0], jetstream.ErrConsumerLeadershipChanged) || !strings.Contains(errs[0].Error(), "c1") {
		t.Fatalf("reported %v, want c1's leadership change", errs)
	}
}

// Silence on one consumer's request replaces its inbox alone.
func TestTiersMissedHeartbeatsOfOneConsumer(t *testing.T) {
	t.Parallel()
	s, _ := openLanes(t, &failures{}, nil)
	before := inboxes(s)
	t0 := time.Now()
	s.replaceIfSilent(t0)
	before[2].credits.Store(1) // a doorbell is out, and nothing comes
	before[2].heard.Store(t0.UnixNano())
	before[0].credits.Store(1) // and one that keeps answering
	for at := t0; at.Sub(t0) <= 3*heartbeat; at = at.Add(heartbeat / 2) {
		before[0].heard.Store(at.UnixNano())
		s.replaceIfSilent(at)
	}
	after := inboxes(s)
	if after[0] != before[0] || after[1] != before[1] || after[2] == before[2] {
		t.Fatal("want the inbox of c2 replaced, and it alone")
	}
}

// Failures of two consumers are one episode, over once both answered.
func TestTiersRecoverOnceEveryConsumerAnswers(t *testing.T) {
	t.Parallel()
	recovered := 0
	s, _ := openLanes(t, &failures{}, func() { recovered++ })
	s.fail(s.lanes[0], errors.New("no"))
	s.fail(s.lanes[2], errors.New("no"))
	s.lanes[1].in.answered.Store(time.Now().UnixNano() + 1)
	s.lanes[0].in.answered.Store(time.Now().UnixNano() + 1)
	s.noteAnswers()
	if recovered != 0 {
		t.Fatal("recovered while c2 had not answered since it failed")
	}
	s.lanes[2].in.answered.Store(time.Now().UnixNano() + 1)
	s.noteAnswers()
	s.noteAnswers()
	if recovered != 1 {
		t.Fatalf("recovered %d times, want once when c2 answered", recovered)
	}
}

// After a reconnect (the server restarted), every consumer is pulled
// from again.
func TestTiersPullAgainAfterAReconnect(t *testing.T) {
	t.Parallel()
	tr := startTiers(t, tierSetup{capacity: 3})
	tr.waitIdle(t, 3)
	tr.srv.Restart()
	publish(t, tr.js, "q.2", 1)
	publish(t, tr.js, "q.0", 1)
	publish(t, tr.js, "q.1", 1)
	natstest.Eventually(t, 20*time.Second, func() bool {
		got, _, _ := tr.o.accepted()
		return len(got) == 3
	}, func() string {
		got, _, _ := tr.o.accepted()
		return fmt.Sprintf("accepted %v after the restart, want one of each consumer", got)
	})
}

// A reconnect ends the back-off of failures on the old connection: after
// an outage long enough to reach retryMax, every consumer is asked again
// at once on fresh inboxes, not up to retryMax later (a task due just
// after a server restart waited that long). One waiting to be declared
// again still waits.
func TestReconnectEndsTheBackOff(t *testing.T) {
	t.Parallel()
	s, _ := openLanes(t, &failures{}, nil)
	now := time.Now()
	for _, l := range s.lanes {
		for l.retry < retryMax {
			l.backOff(now)
		}
	}
	s.lanes[1].redeclareAt = now.Add(time.Minute)
	s.lanes[1].notBefore = s.lanes[1].redeclareAt
	before := inboxes(s)
	s.reconnected()
	for i, l := range s.lanes {
		if l.in == before[i] {
			t.Errorf("consumer %s kept its inbox across the reconnect", l.t.name)
		}
		if want := i != 1; l.available(now) != want {
			t.Errorf("consumer %s available at once after the reconnect: %v, want %v", l.t.name, l.available(now), want)
		}
	}
}
