package kv

import (
	"context"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/corral-go/corral/connection"
	"github.com/corral-go/corral/internal/natstest"
)

// A renewal that was stored although its answer was lost leaves the key
// at a revision the lease does not know: the next renewal finds the
// lease's own id there and carries on, instead of giving the lock up.
func TestLeaseAdoptsARenewalWhoseAnswerWasLost(t *testing.T) {
	t.Parallel()
	srv := natstest.RunServer(t)
	nc, err := nats.Connect(srv.URL())
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	lock, err := NewLock(LockConfig{Bucket: "locks", Key: "leader", TTL: 3 * time.Second, RenewEvery: 300 * time.Millisecond},
		connection.NewFixed(nc))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	lease, err := lock.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = lease.Release(ctx) }()
	// What a renewal whose PubAck was lost leaves behind: the same id at a
	// later revision.
	stored, err := lock.bucket.Put(ctx, "leader", lease.value)
	if err != nil {
		t.Fatal(err)
	}
	natstest.Eventually(t, 10*time.Second, func() bool {
		lease.mu.Lock()
		defer lease.mu.Unlock()
		return lease.rev > stored
	}, func() string { return "the lease never renewed past the stored revision" })
	select {
	case <-lease.Lost():
		t.Fatal("the lease was given up although the key holds its id")
	default:
	}
	if since := time.Since(lease.Renewed()); since > time.Second {
		t.Fatalf("last renewed %v ago, want within a renewal period", since)
	}
}

// A renewal answered after the lease's deadline comes too late, even when
// it is read before the timer that closes Lost at the deadline has run
// (both were due when a paused process resumed): the lease is lost, as
// Valid said once the deadline had passed.
func TestLeaseRenewedPastItsDeadlineIsLost(t *testing.T) {
	t.Parallel()
	cfg := LockConfig{TTL: time.Second}
	sent := time.Now().Add(-2 * cfg.TTL)
	lease := &Lease{lock: &Lock{cfg: cfg}, renewed: sent, lost: make(chan struct{}), stop: make(chan struct{})}
	if lease.extend(2, sent.Add(cfg.RenewEvery), sent.Add(cfg.holdFor())) {
		t.Fatal("a renewal answered past the deadline extended the lease")
	}
	select {
	case <-lease.Lost():
	default:
		t.Fatal("a renewal answered past the deadline left Lost open")
	}
	if lease.Valid() {
		t.Fatal("a lease renewed too late is valid")
	}

	// Valid, asked first, decides the same.
	lease = &Lease{lock: &Lock{cfg: cfg}, renewed: sent, lost: make(chan struct{}), stop: make(chan struct{})}
	if lease.Valid() {
		t.Fatal("a lease past its deadline is valid")
	}
	select {
	case <-lease.Lost():
	default:
		t.Fatal("Valid found the lease past its deadline and left Lost open")
	}
	if lease.extend(2, sent.Add(cfg.RenewEvery), sent.Add(cfg.holdFor())) || lease.rev != 0 {
		t.Fatal("a renewal read after Valid said the lease was lost extended it")
	}
}
