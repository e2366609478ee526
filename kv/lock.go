package kv

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
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
		LimitMarkerTTL: cfg.LimitMarkerTTL, Events: cfg.Events, lockBucket: true}, src, codec.String{})
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
	id       string
	lost     chan struct{}
	stop     chan struct{}
	done     chan struct{}
	mu       sync.Mutex
	rev      uint64
	renewed  time.Time // when the last renewal that succeeded was sent
	isLost   bool
	stopOnce sync.Once
}

// TryAcquire takes the lock if it is free; ok is false when another holds
// it.
func (l *Lock) TryAcquire(ctx context.Context) (lease *Lease, ok bool, err error) {
	id := nuid.Next()
	sent := time.Now()
	rev, err := l.bucket.Create(ctx, l.cfg.Key, id)
	if errors.Is(err, ErrKeyExists) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, err
	}
	lease = &Lease{Token: rev, lock: l, id: id, rev: rev, renewed: sent,
		lost: make(chan struct{}), stop: make(chan struct{}), done: make(chan struct{})}
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

// renew keeps the lease until Release, or until it is lost. The loss
// deadline is a timer of its own, so a renewal that blocks cannot delay
// it, and no renewal waits past it.
func (s *Lease) renew(sent time.Time) {
	defer close(s.done)
	cfg := s.lock.cfg
	deadline := sent.Add(cfg.TTL - cfg.TTL/10)
	lose := time.AfterFunc(time.Until(deadline), s.markLost)
	defer lose.Stop()
	tick := time.NewTicker(cfg.RenewEvery)
	defer tick.Stop()
	for {
		select {
		case <-s.stop:
			return
		case <-s.lost:
			return
		case <-tick.C:
		}
		s.mu.Lock()
		rev := s.rev
		s.mu.Unlock()
		next, sent, err := s.renewOnce(rev, deadline)
		switch {
		case err == nil:
			if !lose.Stop() {
				return // the deadline came first: Lost is closed, and stays so
			}
			s.mu.Lock()
			s.rev, s.renewed = next, sent
			s.mu.Unlock()
			deadline = sent.Add(cfg.TTL - cfg.TTL/10)
			lose.Reset(time.Until(deadline))
		case errors.Is(err, ErrRevisionMismatch), errors.Is(err, ErrKeyNotFound):
			s.markLost()
			return
		}
	}
}

// renewOnce renews the lease at rev. It returns the new revision and
// when the try that stored it was sent, or why none did: the lock is
// taken, the deadline passed, or the lease was stopped or lost.
//
// A renewal's request can be lost without an answer: a stream leader
// that steps down drops the proposals it has not committed, and a publish
// that reaches a node once it is a follower is ignored. Waiting for that
// answer until the deadline would lose the lease over one election, so
// while a try waits, another is sent a third of the time left later (at
// least TTL/10). Earlier tries keep waiting, up to the deadline, so a slow
// answer is not thrown away either. A try that follows a stored one finds
// its own id at a later revision and adopts it (see adopt). After a quick
// failure (no responders, a 503 while there is no leader, a reconnect)
// with no try left waiting, the next is sent TTL/20 after the last.
// Every try ends before renewOnce returns.
func (s *Lease) renewOnce(rev uint64, deadline time.Time) (uint64, time.Time, error) {
	cfg := s.lock.cfg
	ctx, cancel := context.WithDeadline(context.Background(), deadline)
	defer cancel()
	type answer struct {
		next uint64
		sent time.Time
		err  error
	}
	answers := make(chan answer)
	inflight := 0
	try := func() time.Duration {
		inflight++
		sent := time.Now()
		go func() {
			next, err := s.lock.bucket.CompareAndSet(ctx, cfg.Key, s.id, rev)
			if errors.Is(err, ErrRevisionMismatch) {
				next, err = s.adopt(ctx, rev)
			}
			answers <- answer{next, sent, err}
		}()
		left := deadline.Sub(sent)
		return min(left, max(left/3, cfg.TTL/10))
	}
	// best is the success with the highest revision, else a finding that
	// the lock is taken, else the last error. A success wins over a
	// finding: tries run at once, and one that adopts the revision another
	// stored can find the key moved on by a third; while the lock is
	// another's, no try of this lease can succeed.
	best := answer{err: fmt.Errorf("kv: renew %s: %w", cfg.Key, context.DeadlineExceeded)}
	settled := false
	stop, lost := s.stop, s.lost
	again := time.NewTimer(try())
	defer again.Stop()
	for inflight > 0 || !settled {
		select {
		case a := <-answers:
			inflight--
			switch {
			case a.err == nil:
				if best.err != nil || a.next > best.next {
					best = a
				}
				settled = true
				cancel()
			case best.err == nil: // a success is kept
			case errors.Is(a.err, ErrRevisionMismatch), errors.Is(a.err, ErrKeyNotFound):
				// Send no more, but let the tries in flight tell.
				best, settled = a, true
			case !settled:
				best = a
				if inflight == 0 {
					again.Reset(time.Until(a.sent.Add(cfg.TTL / 20)))
				}
			}
		case <-again.C:
			if !settled {
				again.Reset(try())
			}
		case <-stop:
			// Send no more tries, but wait for those sent: one may have
			// been stored, and Release needs the revision.
			stop, settled = nil, true
		case <-lost:
			lost, settled = nil, true
			cancel()
		}
	}
	return best.next, best.sent, best.err
}

// adopt renews once more after a renewal found another revision than rev:
// when the key still holds this lease's id, an earlier renewal was stored
// and only its answer lost (a timeout, a leader change), and the lease is
// still this one's. Any other finding is returned as the mismatch.
func (s *Lease) adopt(ctx context.Context, rev uint64) (uint64, error) {
	e, err := s.lock.bucket.Get(ctx, s.lock.cfg.Key)
	switch {
	case errors.Is(err, ErrKeyNotFound), err == nil && (e.Value != s.id || e.Revision <= rev):
		return 0, fmt.Errorf("%w: %s at revision %d", ErrRevisionMismatch, s.lock.cfg.Key, rev)
	case err != nil:
		return 0, err // not known: the next renewal looks again
	}
	return s.lock.bucket.CompareAndSet(ctx, s.lock.cfg.Key, s.id, e.Revision)
}

func (s *Lease) markLost() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.isLost {
		s.isLost = true
		close(s.lost)
	}
}
