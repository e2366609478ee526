package kv_test

import (
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/corral-go/corral/connection"
	"github.com/corral-go/corral/internal/natstest"
	"github.com/corral-go/corral/kv"
)

// A renewal whose request is lost, never answered, is tried again well
// before the lease's loss deadline, so one lost request does not cost the
// lease. On a cluster this is what a stream leader election does to a
// renewal: the old leader drops the proposals it has not committed, and
// ignores what reaches it once it is a follower. Here the path is held
// for less than the TTL, then reset, which drops the renewal in flight.
func TestLeaseSurvivesARenewalLostWithoutAnswer(t *testing.T) {
	t.Parallel()
	cfg := kv.LockConfig{Bucket: "locks", Key: "leader", TTL: 3 * time.Second, RenewEvery: 300 * time.Millisecond}
	srv := natstest.RunServer(t)
	proxy := natstest.NewProxy(t, srv.URL())
	nc, err := nats.Connect(proxy.URL(), nats.MaxReconnects(-1), nats.ReconnectWait(20*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	ctx := ctxT(t)
	lease := acquire(t, ctx, newLock(t, cfg, connection.NewFixed(nc)))
	paused := time.Now()
	proxy.Pause()
	// Two renewal periods without a success: a renewal is held in the
	// proxy, waiting for its answer.
	natstest.Eventually(t, 10*time.Second, func() bool { return time.Since(lease.Renewed()) > 2*cfg.RenewEvery },
		func() string { return "no renewal was held" })
	cut := time.Now()
	proxy.Cut()
	proxy.Restore()
	natstest.Eventually(t, 10*time.Second, func() bool {
		select {
		case <-lease.Lost():
			return true
		default:
			return lease.Renewed().After(cut)
		}
	}, func() string { return "the lease was neither renewed nor lost" })
	select {
	case <-lease.Lost():
		t.Fatalf("lost the lease %v after its last renewal, although the path was held only %v (TTL %v)",
			time.Since(lease.Renewed()), cut.Sub(paused), cfg.TTL)
	default:
	}
	if err := lease.Release(ctx); err != nil {
		t.Fatal(err)
	}
}

// A lease's Deadline moves with each renewal, and a holder cut off from
// the server reaches the Deadline it last reported before another can
// acquire the lock: what it bounds by Deadline is over by then, and the
// lease is no longer Valid.
func TestLeaseDeadlineComesBeforeAnotherAcquires(t *testing.T) {
	t.Parallel()
	cfg := kv.LockConfig{Bucket: "locks", Key: "leader", TTL: 2 * time.Second, RenewEvery: 300 * time.Millisecond}
	ctx := ctxT(t)
	srv, proxy, a, b := twoHolders(t, cfg)
	leaseA := acquire(t, ctx, a)
	first := leaseA.Deadline()
	if want := leaseA.Renewed().Add(cfg.TTL - cfg.TTL/10); !first.Equal(want) {
		t.Fatalf("Deadline %v, want TTL less a tenth after the acquisition was sent (%v)", first, want)
	}
	waitRenewed(t, srv.URL(), cfg, leaseA.Token)
	natstest.Eventually(t, 10*time.Second, func() bool { return leaseA.Deadline().After(first) },
		func() string { return "a stored renewal did not move the Deadline" })
	proxy.Pause()
	deadline := leaseA.Deadline()
	if !leaseA.Valid() {
		t.Fatalf("a's lease is not valid %v before its Deadline", time.Until(deadline))
	}
	leaseB := acquire(t, ctx, b)
	if acquired := time.Now(); acquired.Before(deadline) {
		t.Errorf("b acquired the lock %v before a's Deadline", deadline.Sub(acquired))
	}
	if leaseA.Valid() {
		t.Error("a's lease is valid past its Deadline, while b holds the lock")
	}
	proxy.Restore()
	if err := leaseB.Release(ctx); err != nil {
		t.Error(err)
	}
}
