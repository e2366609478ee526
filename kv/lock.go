package kv

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/nats-io/nuid"

	"github.com/corral-go/corral/codec"
	"github.com/corral-go/corral/connection"
	"github.com/corral-go/corral/internal/jsapi"
)

// Lock is a distributed lock (and a leader election): at most one holder
// at a time, each acquisition with a fencing token larger than the
// previous one's. It is safe for concurrent use.
type Lock struct {
	cfg    LockConfig
	bucket *Bucket[string]
}

// NewLock returns a lock; nothing is contacted until Acquire. It fails
// with the error of cfg.Validate.
func NewLock(cfg LockConfig, src connection.Source) (*Lock, error) {
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("kv: lock %s: %w", cfg.Key, err)
	}
	cfg = cfg.withDefaults()
	b, err := Open(cfg.Bucket, Config{History: 1, TTL: cfg.TTL, Storage: cfg.Storage, Replicas: cfg.Replicas,
		LimitMarkerTTL: cfg.LimitMarkerTTL, Placement: cfg.Placement, JetStreamAPI: cfg.JetStreamAPI, Events: cfg.Events,
		lockBucket: true}, src, codec.String{})
	if err != nil {
		return nil, err
	}
	return &Lock{cfg: cfg, bucket: b}, nil
}

// Lease is one holding of a lock. Token is its fencing token: pass it to
// what the lock protects, which should refuse a token smaller than the
// largest it has seen.
type Lease struct {
	Token uint64

	lock     *Lock
	value    string // what the key holds while this lease does: its identity
	lost     chan struct{}
	stop     chan struct{}
	done     chan struct{}
	mu       sync.Mutex
	rev      uint64
	renewed  time.Time // when the last renewal that succeeded was sent
	isLost   bool
	stopOnce sync.Once

	// Valid's fast path, written under mu: Deadline on the monotonic
	// clock (see sinceEpoch), and isLost.
	until atomic.Int64
	gone  atomic.Bool
}

// epoch is the origin of sinceEpoch's monotonic clock.
var epoch = time.Now()

// sinceEpoch is t on a monotonic clock, as an int64 to keep atomically.
func sinceEpoch(t time.Time) int64 { return int64(t.Sub(epoch)) }

// TryAcquire takes the lock if it is free; ok is false when another holds
// it.
func (l *Lock) TryAcquire(ctx context.Context) (lease *Lease, ok bool, err error) {
	value := nuid.Next()
	if l.cfg.Value != "" {
		value += " " + l.cfg.Value
	}
	sent := time.Now()
	rev, err := l.bucket.Create(ctx, l.cfg.Key, value)
	if errors.Is(err, ErrKeyExists) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, err
	}
	lease = &Lease{Token: rev, lock: l, value: value, rev: rev, renewed: sent,
		lost: make(chan struct{}), stop: make(chan struct{}), done: make(chan struct{})}
	lease.until.Store(sinceEpoch(sent.Add(l.cfg.holdFor())))
	go lease.renew(sent)
	return lease, true, nil
}

// Acquire waits until it holds the lock, or ctx ends. A holder that
// stops renewing (it crashed, or lost the server) loses the lock after
// TTL; Acquire then gets it within about TTL/5.
func (l *Lock) Acquire(ctx context.Context) (*Lease, error) {
	for {
		lease, ok, err := l.TryAcquire(ctx)
		if err != nil || ok {
			return lease, err
		}
		wait := l.cfg.TTL / 5
		t := time.NewTimer(wait/2 + rand.N(wait/2+1))
		select {
		case <-ctx.Done():
			t.Stop()
			return nil, ctx.Err()
		case <-t.C:
		}
	}
}

// Renewed returns when the lease was last renewed (or acquired): the
// send time of the last renewal the server stored.
func (s *Lease) Renewed() time.Time {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.renewed
}

// Deadline returns when the lease is lost unless a renewal is stored
// before: TTL less a tenth after the last stored renewal was sent. The
// server expires the key no sooner than TTL after it stored that
// renewal, so whatever the holder ends by Deadline ends before another
// can take the lock.
func (s *Lease) Deadline() time.Time {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.renewed.Add(s.lock.cfg.holdFor())
}

// Valid reports whether the holder can still count on the lease: it was
// not released or lost, and its Deadline has not passed. Once false it
// stays false. A lease found past its Deadline is lost, and Lost is
// closed before Valid returns: a process resumed after a pause may ask
// before the timer that closes Lost at the Deadline has run.
func (s *Lease) Valid() bool {
	select {
	case <-s.stop:
		return false // released: Release says whether it was lost
	default:
	}
	// Asked for every task a worker runs: no lock while the Deadline is
	// ahead.
	if !s.gone.Load() && sinceEpoch(time.Now()) <= s.until.Load() {
		return true
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if time.Now().After(s.renewed.Add(s.lock.cfg.holdFor())) {
		s.loseLocked()
	}
	return !s.isLost
}

// Lost returns a channel closed the moment the holder can no longer be
// sure it holds the lock: a renewal found another holder, none succeeded
// for TTL (less a tenth, for clock drift) since it was sent, or Release
// failed.
func (s *Lease) Lost() <-chan struct{} { return s.lost }

// Release gives the lock up at once (it deletes the key if this lease
// still holds it) and stops renewing. It returns ErrLockLost if the lease
// was lost before, or the key was found changed by another. Renewals stop
// whatever the outcome, so when Release fails (ctx ended, the server did
// not answer) the lease is lost too: Lost is closed before Release
// returns, as the key may already be deleted, or expire, and another take
// the lock. A later Release then returns ErrLockLost, and the key, if it
// is still there, expires after TTL.
func (s *Lease) Release(ctx context.Context) error {
	if err := s.release(ctx); err != nil {
		s.markLost()
		return err
	}
	return nil
}

func (s *Lease) release(ctx context.Context) error {
	s.stopOnce.Do(func() { close(s.stop) })
	select {
	case <-s.done:
	case <-ctx.Done():
		return fmt.Errorf("kv: release %s: %w", s.lock.cfg.Key, ctx.Err())
	}
	s.mu.Lock()
	lost, rev := s.isLost, s.rev
	s.mu.Unlock()
	if lost {
		return ErrLockLost
	}
	kv, err := s.lock.bucket.handle.current(ctx)
	if err != nil {
		return fmt.Errorf("kv: release %s: %w", s.lock.cfg.Key, err)
	}
	if err := kv.Delete(ctx, s.lock.cfg.Key, jetstream.LastRevision(rev)); err != nil {
		if jsapi.WrongLastSequence(err) {
			// The key moved past our revision: it expired, or another holds it.
			return fmt.Errorf("%w: %s: %w", ErrLockLost, s.lock.cfg.Key, err)
		}
		return s.lock.bucket.handle.fail(kv, "release", s.lock.cfg.Key, err)
	}
	return nil
}

func (s *Lease) markLost() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.loseLocked()
}

func (s *Lease) loseLocked() {
	if !s.isLost {
		s.isLost = true
		s.gone.Store(true)
		close(s.lost)
	}
}
