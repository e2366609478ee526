package pull

import (
	"context"
	"encoding/json"
	"errors"
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
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if _, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: "S", Subjects: []string{"s"}}); err != nil {
		t.Fatal(err)
	}
	cons, err := js.CreateConsumer(ctx, "S", jetstream.ConsumerConfig{Durable: "h", AckPolicy: jetstream.AckExplicitPolicy})
	if err != nil {
		t.Fatal(err)
	}
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
