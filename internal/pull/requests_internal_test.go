package pull

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/corral-go/corral/internal/natstest"
)

// A request ends by Config.Until, with heartbeats the server accepts for
// so short a wait, and none is sent once too little is left: a task
// worker paused with requests out has none left by the time its lease
// can expire.
func TestRequestsEndByUntil(t *testing.T) {
	t.Parallel()
	srv := natstest.RunServer(t)
	nc := connectInternal(t, srv.URL())
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	_, cons := declareTestConsumer(t, ctx, nc)
	spyConn := connectInternal(t, srv.URL())
	spy, err := spyConn.SubscribeSync("$JS.API.CONSUMER.MSG.NEXT.S.h")
	if err != nil {
		t.Fatal(err)
	}
	if err := spyConn.Flush(); err != nil {
		t.Fatal(err)
	}
	var until atomic.Int64
	p := newTestPullerFor(t, nc, Config{Until: func() time.Time { return time.Unix(0, until.Load()) }}, &owner{})
	s, err := p.Open(nc)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Drain(time.Time{})

	now := time.Now()
	until.Store(now.Add(1500 * time.Millisecond).UnixNano())
	if err := s.request(now); err != nil {
		t.Fatal(err)
	}
	m, err := spy.NextMsg(10 * time.Second)
	if err != nil {
		t.Fatalf("no request was sent: %v", err)
	}
	var req pullRequest
	if err := json.Unmarshal(m.Data, &req); err != nil {
		t.Fatal(err)
	}
	if req.Expires != 1500*time.Millisecond || req.Heartbeat <= 0 || 2*req.Heartbeat > req.Expires {
		t.Fatalf("request %s: want it to expire in 1.5s, with heartbeats at most half that", m.Data)
	}
	natstest.Eventually(t, 10*time.Second, func() bool {
		info, err := cons.Info(ctx)
		return err == nil && info.NumWaiting == 0 && s.in.credits.Load() == 0
	}, func() string { return "the server still holds the request, or its end did not reach the inbox" })
	select {
	case status := <-p.status:
		if !errors.Is(status, errRequestDone) {
			t.Fatalf("the request ended with %v, want its expiry", status)
		}
	default:
	}

	until.Store(time.Now().Add(minExpiry / 2).UnixNano())
	if err := s.request(time.Now()); err != nil {
		t.Fatal(err)
	}
	if c := s.in.credits.Load(); c != 0 {
		t.Fatalf("a request for %d was sent with less than %v left", c, minExpiry)
	}
}

// failures is an owner that records what the puller reports.
type failures struct {
	owner
	mu   sync.Mutex
	errs []error
}

func (f *failures) Failed(err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.errs = append(f.errs, err)
}

func (f *failures) reported() []error {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]error(nil), f.errs...)
}

// A silence while the process did not run (paused, or starved of CPU)
// says nothing about the server: what it sent may wait unread. The
// requests are presumed lost only once the silence goes on for two
// heartbeats after the process runs again.
func TestSilenceWhileThePullerDidNotRunLosesNoRequest(t *testing.T) {
	t.Parallel()
	srv := natstest.RunServer(t)
	nc := connectInternal(t, srv.URL())
	f := &failures{}
	p := newTestPullerFor(t, nc, Config{}, f)
	s, err := p.Open(nc)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Drain(time.Time{})
	first := s.in
	t0 := time.Now()
	first.credits.Store(1) // a request is out
	first.heard.Store(t0.UnixNano())
	s.replaceIfSilent(t0)
	resumed := t0.Add(10 * time.Second)
	s.replaceIfSilent(resumed)
	if s.in != first || len(f.reported()) > 0 {
		t.Fatalf("a silence while the puller did not run replaced the inbox, reporting %v", f.reported())
	}
	// The loop runs every half heartbeat, as Run's does, and still
	// hears nothing.
	var replacedAt time.Time
	for at := resumed; replacedAt.IsZero() && at.Sub(resumed) <= 3*heartbeat; at = at.Add(heartbeat / 2) {
		if s.replaceIfSilent(at); s.in != first {
			replacedAt = at
		}
	}
	if replacedAt.IsZero() {
		t.Fatalf("a silence of %v after the puller ran again did not replace the inbox", 3*heartbeat)
	}
	if silent := replacedAt.Sub(resumed); silent <= 2*heartbeat {
		t.Fatalf("replaced after %v of silence, want more than two heartbeats", silent)
	}
	if errs := f.reported(); len(errs) != 1 || !errors.Is(errs[0], jetstream.ErrNoHeartbeat) {
		t.Fatalf("reported %v, want one missed heartbeat", errs)
	}
}

// Room less than half the owner's is asked for once it has waited
// partialAfter unasked, with one consumer or several: an owner holding
// long runs in the rest would otherwise keep it unused while they run.
// The requests are read as the server gets them: a probe of several
// consumers is answered at once, and its credit may be gone by the time
// the test could look at it.
func TestPartialRoomIsAskedForAfterAWhile(t *testing.T) {
	t.Parallel()
	for _, consumers := range [][]string{{"h"}, {"h", "h2"}} {
		t.Run(fmt.Sprint(len(consumers)), func(t *testing.T) {
			t.Parallel()
			srv := natstest.RunServer(t)
			nc := connectInternal(t, srv.URL())
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			declareTestConsumer(t, ctx, nc)
			spy := connectInternal(t, srv.URL())
			asked, err := spy.SubscribeSync("$JS.API.CONSUMER.MSG.NEXT.S.>")
			if err != nil {
				t.Fatal(err)
			}
			// sent is what the requests so far asked for: the puller's
			// connection flushed, what the server passed on is pending.
			sent := func() []int {
				t.Helper()
				if err := nc.Flush(); err != nil {
					t.Fatal(err)
				}
				if err := spy.Flush(); err != nil {
					t.Fatal(err)
				}
				var batches []int
				for {
					m, err := asked.NextMsg(0)
					if err != nil {
						return batches
					}
					var req pullRequest
					if err := json.Unmarshal(m.Data, &req); err != nil {
						t.Fatal(err)
					}
					batches = append(batches, req.Batch)
				}
			}
			if err := spy.Flush(); err != nil {
				t.Fatal(err)
			}
			p := newTestPullerFor(t, nc, Config{Consumers: consumers}, &owner{})
			s, err := p.Open(nc)
			if err != nil {
				t.Fatal(err)
			}
			defer s.Drain(time.Time{})
			request := func(now time.Time) {
				t.Helper()
				var err error
				if p.tiered() {
					err = s.requestTiered(now)
				} else {
					err = s.request(now)
				}
				if err != nil {
					t.Fatal(err)
				}
			}
			for range p.Capacity() - 1 {
				p.held.hold() // four of five held: one free, less than half
			}
			t0 := time.Now()
			request(t0)
			request(t0.Add(partialAfter / 2))
			if got := sent(); len(got) != 0 {
				t.Fatalf("asked for %v at once, want the one free waiting %v", got, partialAfter)
			}
			if w := s.wait(t0.Add(partialAfter / 2)); w > partialAfter/2 {
				t.Fatalf("the session would wait %v, past when the free room is due to be asked for", w)
			}
			request(t0.Add(partialAfter))
			if got := sent(); len(got) != 1 || got[0] != 1 {
				t.Fatalf("asked for %v after %v, want the one free", got, partialAfter)
			}
		})
	}
}
