package tasks_test

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/corral-go/corral/internal/natstest"
	"github.com/corral-go/corral/tasks"
)

// The traffic is counted over keepAliveWindow heartbeats, between
// keepAliveWindow+1 renewals of the worker's lease. A family's counts with
// 10 and 1,000 tasks held may differ by keepAliveSlack: the other periodic
// senders keep phases of their own, which scheduling shifts, so that a
// renewal of the recoverer lock can fall on either side of a cut (±1), with
// one to spare. Pulling differs by keepAlivePullSlack: an idle worker has a
// waiting request out on each of the queue's four consumers, which ends at
// the lease's deadline and is followed by a probe of that consumer and a
// new one, each of which may fall on either side of a cut. Other and all
// count their answers too (a renewal's; a pull request's heartbeat and
// end), so twice that. A message per task per heartbeat would add 9,900.
const (
	keepAliveWindow     = 10
	keepAliveHeartbeat  = 200 * time.Millisecond
	keepAliveSlack      = 3
	keepAlivePullSlack  = 3 * 4
	keepAliveOtherSlack = 2 * keepAlivePullSlack
)

// Families of messages, as the monitor receives them: a consumer's
// delivery (its reply an ack subject) whatever it was stored on, others by
// subject. All counts every message, progress the in-progress acks among
// acks, out what the worker's connection sent.
const (
	leaseFamily    = "lease bucket" // $KV.corral_tasks_q.>
	heldFamily     = "held stream"  // corral.tasks.q.held.>
	acksFamily     = "acks"         // $JS.ACK.>
	pullsFamily    = "pull requests"
	deliveryFamily = "deliveries"
	otherFamily    = "other" // answers, pull statuses, heartbeats
	allFamily      = "all messages"
	progress       = "in-progress acks"
	out            = "worker's OutMsgs"
)

var keepAliveFamilies = []string{leaseFamily, heldFamily, acksFamily, pullsFamily, deliveryFamily, otherFamily, allFamily, out}

func family(msg *nats.Msg) string {
	switch s := msg.Subject; {
	case strings.HasPrefix(msg.Reply, "$JS.ACK."):
		return deliveryFamily
	case strings.HasPrefix(s, "$KV.corral_tasks_q."):
		return leaseFamily
	case strings.HasPrefix(s, "corral.tasks.q.held."):
		return heldFamily
	case strings.HasPrefix(s, "$JS.ACK."):
		return acksFamily
	case strings.HasPrefix(s, "$JS.API.CONSUMER.MSG.NEXT."):
		return pullsFamily
	}
	return otherFamily
}

// TestKeepAliveIsO1 proves that a worker's keep-alive traffic does not
// grow with the tasks it holds: per heartbeat, holding 1,000 long tasks it
// sends what it sends holding 10, give or take keepAliveSlack messages
// per family, with no in-progress ack and one renewal of its lease.
func TestKeepAliveIsO1(t *testing.T) {
	t.Parallel()
	var few, many keepAlive
	if !t.Run("held", func(t *testing.T) {
		t.Run("10", func(t *testing.T) { t.Parallel(); few = measureKeepAlive(t, 10) })
		t.Run("1000", func(t *testing.T) { t.Parallel(); many = measureKeepAlive(t, 1000) })
	}) {
		return
	}
	var table strings.Builder
	for _, f := range append(keepAliveFamilies, progress) {
		fmt.Fprintf(&table, "\n  %-16s  10 held: %5d  1000 held: %5d", f, few.msgs[f], many.msgs[f])
	}
	t.Logf("messages over %d heartbeats (%v and %v):%s", keepAliveWindow, few.took, many.took, table.String())
	for _, f := range keepAliveFamilies {
		slack := keepAliveSlack
		switch f {
		case pullsFamily, out:
			slack = keepAlivePullSlack
		case otherFamily, allFamily:
			slack = keepAliveOtherSlack
		}
		if d := many.msgs[f] - few.msgs[f]; d > slack || d < -slack {
			t.Errorf("%s: %d messages over %d heartbeats holding 1000 tasks, %d holding 10: they differ by more than %d",
				f, many.msgs[f], keepAliveWindow, few.msgs[f], slack)
		}
	}
	for held, ka := range map[int]keepAlive{10: few, 1000: many} {
		if n := ka.msgs[progress]; n != 0 {
			t.Errorf("holding %d tasks: %d in-progress acks over %d heartbeats, want none", held, n, keepAliveWindow)
		}
		// The lease is renewed once a heartbeat, the recoverer lock as often.
		if ka.took < (keepAliveWindow-2)*keepAliveHeartbeat {
			t.Errorf("holding %d tasks: %d renewals of the lease in %v, more than one per %v heartbeat",
				held, keepAliveWindow, ka.took, keepAliveHeartbeat)
		}
		if n := ka.msgs[leaseFamily]; n < 2*keepAliveWindow-1 || n > 2*keepAliveWindow+1 {
			t.Errorf("holding %d tasks: %d lease bucket messages over %d heartbeats, want %d±1: one renewal each of the lease and the recoverer lock",
				held, n, keepAliveWindow, 2*keepAliveWindow)
		}
	}
}

// measureKeepAlive has a worker, on a server of its own, hold n tasks
// until each has been held longer than the lease TTL and the claim wait,
// and counts the messages sent over the next keepAliveWindow heartbeats.
func measureKeepAlive(t *testing.T, n int) keepAlive {
	srv := natstest.RunServer(t)
	// Room for twice what it holds, so that it keeps pull requests out. A
	// TTL and claim wait of 1s were missed claiming 1,000 at once under -race.
	cfg := tasks.Config{MaxConcurrency: 2 * n, Heartbeat: keepAliveHeartbeat, LeaseTTL: 2 * time.Second,
		ClaimWait: 2 * time.Second, SweepEvery: time.Hour, Storage: "memory"}
	enqueue(t, natstest.Connect(t, srv.URL()), cfg, "q", n)
	release := make(chan struct{})
	free := sync.OnceFunc(func() { close(release) })
	defer free()
	// The runs under way: a lease lost while the worker claims (a starved
	// process under -race) cuts its runs off, and they run again.
	var running atomic.Int64
	wk := startWorker(t, srv.URL(), "q", cfg, tasks.HandlerFunc(func(ctx context.Context, _ *tasks.Task) error {
		running.Add(1)
		defer running.Add(-1)
		select {
		case <-release:
		case <-ctx.Done():
		}
		return nil
	}), nil)
	natstest.Eventually(t, 30*time.Second, func() bool { return running.Load() == int64(n) && wk.w.Status().Held == n },
		func() string { return fmt.Sprintf("%d of %d tasks running; %+v", running.Load(), n, wk.w.Status()) })
	heldLongEnough := time.Now().Add(max(cfg.LeaseTTL, cfg.ClaimWait))
	ka := countKeepAlive(t, srv.URL(), "$KV.corral_tasks_q.w."+wk.w.Status().Worker, heldLongEnough, wk.nc)
	free()
	done := func() uint64 { return wk.w.Status().Counters.Completed }
	natstest.Eventually(t, 30*time.Second, func() bool { return done() == uint64(n) },
		func() string { return fmt.Sprintf("%d of %d completed once released", done(), n) })
	if err := wk.stop(); err != nil && !errors.Is(err, context.Canceled) {
		t.Fatalf("stop: %v", err)
	}
	return ka
}

// keepAlive is what was sent over a window, by family, and its length.
type keepAlive struct {
	msgs map[string]int
	took time.Duration
}

// countKeepAlive counts, on a connection of its own, the messages the
// server routes between the first renewal on lease after from and the
// keepAliveWindow-th after it, by family, out being what worker sent.
func countKeepAlive(t *testing.T, url, lease string, from time.Time, worker *nats.Conn) keepAlive {
	t.Helper()
	total, first, renewals := map[string]int{}, map[string]int{}, 0 // the callback's alone
	var firstAt time.Time
	done := make(chan keepAlive, 1) // the window's counts, sent once
	// One subscription, so one callback sees messages in the order the
	// server routed them: counts taken at a renewal are the counts up to it.
	_, err := natstest.Connect(t, url).Subscribe(">", func(msg *nats.Msg) {
		f := family(msg)
		total[f]++
		total[allFamily]++
		if f == acksFamily && string(msg.Data) == "+WPI" {
			total[progress]++
		}
		if f != leaseFamily || msg.Subject != lease || time.Now().Before(from) {
			return
		}
		total[out] = int(worker.Stats().OutMsgs)
		switch renewals++; renewals {
		case 1:
			first, firstAt = maps.Clone(total), time.Now()
		case 1 + keepAliveWindow:
			w := keepAlive{msgs: map[string]int{}, took: time.Since(firstAt)}
			for f, n := range total {
				w.msgs[f] = n - first[f]
			}
			done <- w
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	select {
	case w := <-done:
		return w
	case <-time.After(time.Until(from) + 30*time.Second):
		t.Fatalf("fewer than %d renewals of %s in 30s", keepAliveWindow+1, lease)
		return keepAlive{}
	}
}
