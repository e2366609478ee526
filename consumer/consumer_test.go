package consumer_test

import (
	"context"
	"encoding/binary"
	"errors"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/corral-go/corral/connection"
	"github.com/corral-go/corral/consumer"
	"github.com/corral-go/corral/internal/natstest"
	"github.com/corral-go/corral/supervisor"
)

func TestWorkersRunConcurrently(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	const workers = 8
	var inside atomic.Int32
	all := make(chan struct{})
	h := consumer.HandlerFunc(func(ctx context.Context, m *consumer.Msg) error {
		if inside.Add(1) == workers {
			close(all)
		}
		select {
		case <-all: // every worker is inside at once
			return nil
		case <-time.After(10 * time.Second):
			return errors.New("not all workers ran at once")
		}
	})
	if err := e.sup.Handle("fan", consumer.Config{Subject: "fan.out", Workers: workers}, h); err != nil {
		t.Fatal(err)
	}
	stop := e.serve()
	e.subscribed(1)
	e.publish("fan.out", workers, []byte("x"))
	eventually(t, "all handled", func() bool {
		c := e.status("fan").Counters
		return c.Processed+c.Failed == workers
	})
	if c := e.status("fan").Counters; c.Processed != workers || c.Failed != 0 || c.Received != workers {
		t.Fatalf("counters: got %+v", c)
	}
	cleanStop(t, stop)
}

// TestOverflowPoliciesUnderOverload is not parallel: it measures the
// process's heap, which the other tests' servers and messages would
// inflate.
func TestOverflowPoliciesUnderOverload(t *testing.T) {
	const (
		workers   = 2
		queueSize = 100
		n         = 10 * (queueSize + workers) // 10x what the pool holds
		size      = 64 << 10
	)
	for _, policy := range []consumer.Overflow{consumer.Block, consumer.DropNewest, consumer.DropOldest} {
		t.Run(string(policy), func(t *testing.T) {
			e := newEnv(t)
			gate := make(chan struct{})
			var mu sync.Mutex
			var seen []uint64
			h := consumer.HandlerFunc(func(ctx context.Context, m *consumer.Msg) error {
				<-gate
				mu.Lock()
				seen = append(seen, binary.BigEndian.Uint64(m.Data()))
				mu.Unlock()
				return nil
			})
			cfg := consumer.Config{Subject: "load." + string(policy), Workers: workers, QueueSize: queueSize, Overflow: policy}
			if policy == consumer.Block {
				// Small enough that nats.go drops part of the overload.
				cfg.PendingMsgs, cfg.PendingBytes = 300, 4<<20
			}
			if err := e.sup.Handle("load", cfg, h); err != nil {
				t.Fatal(err)
			}
			stop := e.serve()
			e.subscribed(1)

			before := liveHeap()
			data := make([]byte, size)
			for i := range uint64(n) {
				binary.BigEndian.PutUint64(data, i)
				if err := e.pub.Publish(cfg.Subject, data); err != nil {
					t.Fatal(err)
				}
			}
			if err := e.pub.Flush(); err != nil {
				t.Fatal(err)
			}
			// Everything has reached the handler's side: in flight, queued,
			// pending in nats.go, or dropped.
			eventually(t, "every message accounted for", func() bool {
				c := e.status("load").Counters
				return c.Received+c.PendingDropped+uint64(c.Pending) == n && c.QueueDepth == queueSize
			})
			growth := int64(liveHeap()) - int64(before)
			// Held at most: the queue, the workers, a blocked callback and
			// nats.go's pending bytes; 16MiB of slack, against 64MiB sent.
			if bound := int64((queueSize+workers+1)*size + 4<<20 + 16<<20); growth > bound {
				t.Fatalf("heap grew %d bytes under overload, want at most %d", growth, bound)
			}

			close(gate)
			eventually(t, "processed + dropped = published", func() bool {
				c := e.status("load").Counters
				return c.Processed+c.Dropped == n && c.InFlight == 0 && c.QueueDepth == 0 && c.Pending == 0
			})
			ended, _ := natstest.WaitFor[consumer.SlowConsumerEnded](t, e.rec, 0, 10*time.Second, nil)
			c := e.status("load").Counters
			if started := natstest.All[consumer.SlowConsumerStarted](e.rec); len(started) != 1 {
				t.Fatalf("got %d slow-consumer start events, want 1", len(started))
			}
			if ended.Dropped != c.Dropped {
				t.Fatalf("episode dropped %d, counters say %d", ended.Dropped, c.Dropped)
			}
			if c.Dropped == 0 || c.Failed != 0 || c.Rejected != 0 {
				t.Fatalf("counters: got %+v, want drops and nothing failed", c)
			}
			// Two messages were taken by the gated workers before the
			// queue filled; the queue then kept the oldest or the newest.
			mu.Lock()
			kept := map[uint64]bool{}
			for _, seq := range seen {
				kept[seq] = true
			}
			mu.Unlock()
			switch policy {
			case consumer.DropNewest:
				for seq := range uint64(workers + queueSize) {
					if !kept[seq] {
						t.Fatalf("drop_newest dropped message %d, one of the oldest", seq)
					}
				}
			case consumer.DropOldest:
				for seq := uint64(n - queueSize); seq < n; seq++ {
					if !kept[seq] {
						t.Fatalf("drop_oldest dropped message %d, one of the newest", seq)
					}
				}
			}
			if policy != consumer.Block && (len(kept) != workers+queueSize || c.PendingDropped != 0) {
				t.Fatalf("%s handled %d messages (nats.go dropped %d), want exactly the %d the pool holds",
					policy, len(kept), c.PendingDropped, workers+queueSize)
			}
			cleanStop(t, stop)
			if after := e.status("load").Counters; after.Dropped != c.Dropped || after.PendingDropped != c.PendingDropped {
				t.Fatalf("counters changed by the stop: %+v, then %+v", c, after)
			}
		})
	}
}

// liveHeap is the heap in use once garbage is collected. The second
// collection empties the sync.Pool victim caches that nats-server and
// nats.go keep their buffers in: after one, the server's buffers from the
// overload alone can exceed the bound the test sets.
func liveHeap() uint64 {
	var m runtime.MemStats
	runtime.GC()
	runtime.GC()
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}

func TestRequestReply(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	echo := consumer.RequestFunc(func(ctx context.Context, m *consumer.Msg) (consumer.Reply, error) {
		switch string(m.Data()) {
		case "fail":
			return consumer.Reply{}, errors.New("it broke")
		case "invalid":
			return consumer.Reply{}, consumer.Errorf(422, "bad input %q", "invalid")
		case "slow":
			<-ctx.Done()
			return consumer.Reply{}, ctx.Err()
		}
		h := nats.Header{}
		h.Set("Echo", "yes")
		return consumer.Reply{Data: append([]byte("echo:"), m.Data()...), Header: h}, nil
	})
	if err := e.sup.HandleRequest("echo", consumer.Config{Subject: "svc.echo", Workers: 2, Timeout: 100 * time.Millisecond}, echo); err != nil {
		t.Fatal(err)
	}
	stop := e.serve()
	e.subscribed(1)

	tests := []struct {
		req      string
		wantData string
		wantCode int
		wantDesc string
	}{
		{req: "hi", wantData: "echo:hi"},
		{req: "fail", wantCode: 500, wantDesc: "it broke"},
		{req: "invalid", wantCode: 422, wantDesc: `bad input "invalid"`},
		{req: "slow", wantCode: 504, wantDesc: "timeout"},
	}
	for _, tt := range tests {
		reply, err := e.pub.Request("svc.echo", []byte(tt.req), 5*time.Second)
		if err != nil {
			t.Fatalf("%s: %v", tt.req, err)
		}
		se := consumer.ResponseError(reply)
		if tt.wantCode == 0 {
			if se != nil || string(reply.Data) != tt.wantData || reply.Header.Get("Echo") != "yes" {
				t.Fatalf("%s: got %q %v %v", tt.req, reply.Data, reply.Header, se)
			}
			continue
		}
		if se == nil || se.Code != tt.wantCode || !strings.Contains(se.Description, tt.wantDesc) {
			t.Fatalf("%s: got service error %+v, want %d %q", tt.req, se, tt.wantCode, tt.wantDesc)
		}
	}
	// Workers count a call after its reply has gone.
	eventually(t, "counted", func() bool {
		c := e.status("echo").Counters
		return c.Processed+c.Failed == 4
	})
	// The 422 is the request's fault: a client error, not a failure.
	if c := e.status("echo").Counters; c.Processed != 2 || c.ClientErrors != 1 || c.Failed != 2 {
		t.Fatalf("counters: got %+v, want 2 processed (1 a client error) and 2 failed", c)
	}
	cleanStop(t, stop)
}

func TestRejectAnswersBusyAtOnce(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	gate := make(chan struct{})
	const held = 1 + 2  // one worker, a queue of two
	const n = 10 * held // a 10x overload
	started := make(chan struct{}, n)
	h := consumer.RequestFunc(func(ctx context.Context, m *consumer.Msg) (consumer.Reply, error) {
		started <- struct{}{}
		<-gate
		return consumer.Reply{Data: []byte("ok")}, nil
	})
	if err := e.sup.HandleRequest("busy", consumer.Config{Subject: "svc.busy", Workers: 1, QueueSize: 2, Overflow: consumer.Reject}, h); err != nil {
		t.Fatal(err)
	}
	stop := e.serve()
	e.subscribed(1)

	inbox := nats.NewInbox()
	replies, err := e.pub.SubscribeSync(inbox)
	if err != nil {
		t.Fatal(err)
	}
	// The worker takes the first before the rest arrive: had they all
	// come first, only the queue's two would be held.
	for i := range n {
		if err := e.pub.PublishRequest("svc.busy", inbox, nil); err != nil {
			t.Fatal(err)
		}
		if i == 0 {
			select {
			case <-started:
			case <-time.After(5 * time.Second):
				t.Fatal("the first request never reached the handler")
			}
		}
	}
	// The rejected ones are answered while the others wait.
	for range n - held {
		m, err := replies.NextMsg(5 * time.Second)
		if err != nil {
			t.Fatal(err)
		}
		if se := consumer.ResponseError(m); se == nil || se.Code != 503 {
			t.Fatalf("got %q %v, want a 503 while the queue is full", m.Data, se)
		}
	}
	close(gate)
	for range held {
		m, err := replies.NextMsg(5 * time.Second)
		if err != nil {
			t.Fatal(err)
		}
		if se := consumer.ResponseError(m); se != nil || string(m.Data) != "ok" {
			t.Fatalf("got %q %v, want ok", m.Data, se)
		}
	}
	eventually(t, "counted", func() bool { return e.status("busy").Counters.Processed == held })
	if c := e.status("busy").Counters; c.Rejected != n-held || c.Received != n {
		t.Fatalf("counters: got %+v", c)
	}
	ended, _ := natstest.WaitFor[consumer.SlowConsumerEnded](t, e.rec, 0, 10*time.Second, nil)
	if started := natstest.All[consumer.SlowConsumerStarted](e.rec); len(started) != 1 || ended.Rejected != n-held {
		t.Fatalf("got %d episodes, the first ending %+v; want one rejecting %d", len(started), ended, n-held)
	}
	cleanStop(t, stop)
}

func TestPanicsAreRecoveredPerMessage(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	h := consumer.HandlerFunc(func(ctx context.Context, m *consumer.Msg) error {
		if string(m.Data()) == "panic" {
			panic("handler bug")
		}
		return nil
	})
	if err := e.sup.Handle("fragile", consumer.Config{Subject: "fragile", Workers: 4, QueueSize: 2000}, h); err != nil {
		t.Fatal(err)
	}
	stop := e.serve()
	e.subscribed(1)
	began := time.Now()
	e.publish("fragile", 1000, []byte("panic"))
	e.publish("fragile", 1, []byte("fine"))
	eventually(t, "all handled", func() bool {
		c := e.status("fragile").Counters
		return c.Processed+c.Failed == 1001
	})
	c := e.status("fragile").Counters
	if c.Panicked != 1000 || c.Failed != 1000 || c.Processed != 1 {
		t.Fatalf("counters: got %+v, want 1000 panicked and failed, 1 processed", c)
	}
	events := natstest.All[consumer.HandlerPanicked](e.rec)
	// At most one event a second, each counting the panics it stands for.
	if limit := 1 + int(time.Since(began)/time.Second); len(events) == 0 || len(events) > limit {
		t.Fatalf("got %d panic events in %v, want between 1 and %d", len(events), time.Since(began), limit)
	}
	var reported uint64
	for _, ev := range events {
		reported += 1 + ev.Suppressed
	}
	if reported > 1000 {
		t.Fatalf("events stand for %d panics, more than the 1000 there were", reported)
	}
	if ev := events[0]; ev.Err == nil || ev.Err.Value != "handler bug" || !strings.Contains(string(ev.Err.Stack), "consumer_test.go") {
		t.Fatalf("panic event: got %+v", ev)
	}
	if st := e.status("fragile").Child; st.State != supervisor.Running || st.Restarts != 0 {
		t.Fatalf("child: got %+v, want running and never restarted", st)
	}
	cleanStop(t, stop)
}

func TestBadDeclarations(t *testing.T) {
	sup := consumer.NewGroup(connection.NewFixed(nil), supervisor.Events{})
	ok := consumer.HandlerFunc(func(context.Context, *consumer.Msg) error { return nil })
	if err := sup.Handle("taken", consumer.Config{Subject: "a.b"}, ok); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name    string
		handler string
		cfg     consumer.Config
		h       consumer.Handler
		want    error
		mention string
	}{
		{"empty subject", "h1", consumer.Config{}, ok, supervisor.ErrInvalidConfig, "subject"},
		{"empty token", "h2", consumer.Config{Subject: "a..b"}, ok, supervisor.ErrInvalidConfig, "empty token"},
		{"> not last", "h3", consumer.Config{Subject: "a.>.b"}, ok, supervisor.ErrInvalidConfig, "'>'"},
		{"partial wildcard", "h4", consumer.Config{Subject: "a.b*"}, ok, supervisor.ErrInvalidConfig, "whole tokens"},
		{"space", "h5", consumer.Config{Subject: "a b"}, ok, supervisor.ErrInvalidConfig, "whitespace"},
		{"queue group", "h6", consumer.Config{Subject: "a", QueueGroup: "q 1"}, ok, supervisor.ErrInvalidConfig, "queue_group"},
		{"reject without requests", "h7", consumer.Config{Subject: "a", Overflow: consumer.Reject}, ok, supervisor.ErrInvalidConfig, "HandleRequest"},
		{"unknown overflow", "h8", consumer.Config{Subject: "a", Overflow: "spill"}, ok, supervisor.ErrInvalidConfig, "overflow"},
		{"negative workers", "h9", consumer.Config{Subject: "a", Workers: -1}, ok, supervisor.ErrInvalidConfig, "workers"},
		{"bad name", "a b", consumer.Config{Subject: "a"}, ok, supervisor.ErrInvalidConfig, `"a b"`},
		{"duplicate", "taken", consumer.Config{Subject: "a"}, ok, consumer.ErrDuplicateHandler, `"taken"`},
		{"nil handler", "h10", consumer.Config{Subject: "a"}, nil, consumer.ErrNilHandler, `"h10"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := sup.Handle(tt.handler, tt.cfg, tt.h)
			if !errors.Is(err, tt.want) || !strings.Contains(err.Error(), tt.mention) {
				t.Fatalf("got %v, want %v mentioning %s", err, tt.want, tt.mention)
			}
		})
	}
	if err := sup.HandleRequest("svc", consumer.Config{Subject: "svc.*", Overflow: consumer.Reject}, consumer.RequestFunc(
		func(context.Context, *consumer.Msg) (consumer.Reply, error) { return consumer.Reply{}, nil })); err != nil {
		t.Fatalf("a request handler may reject: %v", err)
	}
}

func TestPerMessageTimeout(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	h := consumer.HandlerFunc(func(ctx context.Context, m *consumer.Msg) error {
		if _, ok := ctx.Deadline(); !ok {
			return errors.New("no deadline")
		}
		<-ctx.Done()
		return ctx.Err()
	})
	if err := e.sup.Handle("slow", consumer.Config{Subject: "slow", Timeout: 20 * time.Millisecond}, h); err != nil {
		t.Fatal(err)
	}
	stop := e.serve()
	e.subscribed(1)
	e.publish("slow", 3, nil)
	eventually(t, "three timed out", func() bool { return e.status("slow").Counters.Failed == 3 })
	cleanStop(t, stop)
	if l := e.status("slow").Latency; l.Count != 3 || l.Max < 20*time.Millisecond || l.P50 < 19*time.Millisecond {
		t.Fatalf("latency: got %+v, want three calls cut at the 20ms timeout", l)
	}
}
