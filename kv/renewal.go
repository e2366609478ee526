package kv

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// renew keeps the lease until Release, or until it is lost. The loss
// deadline is a timer of its own, so a renewal that blocks cannot delay
// it, and no renewal waits past it.
func (s *Lease) renew(sent time.Time) {
	defer close(s.done)
	cfg := s.lock.cfg
	deadline := sent.Add(cfg.holdFor())
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
			if !s.extend(next, sent, deadline) {
				return
			}
			deadline = sent.Add(cfg.holdFor())
			lose.Reset(time.Until(deadline))
		case errors.Is(err, ErrRevisionMismatch), errors.Is(err, ErrKeyNotFound):
			s.markLost()
			return
		}
	}
}

// extend records a renewal stored at revision next, sent at sent, unless
// it came too late: the lease is lost once deadline has passed, even when
// the answer is read before the timer that closes Lost has run (both were
// due when a paused process resumed). Valid reads the deadline under the
// same lock, so the two never disagree.
func (s *Lease) extend(next uint64, sent, deadline time.Time) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.isLost || time.Now().After(deadline) {
		s.loseLocked()
		return false
	}
	s.rev, s.renewed = next, sent
	s.until.Store(sinceEpoch(sent.Add(s.lock.cfg.holdFor())))
	return true
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
	ctx, cancel := context.WithDeadline(context.Background(), deadline)
	defer cancel()
	r := &renewal{lease: s, rev: rev, deadline: deadline, answers: make(chan renewAnswer),
		best: renewAnswer{err: fmt.Errorf("kv: renew %s: %w", s.lock.cfg.Key, context.DeadlineExceeded)}}
	stop, lost := s.stop, s.lost
	again := time.NewTimer(r.try(ctx))
	defer again.Stop()
	for r.inflight > 0 || !r.settled {
		select {
		case a := <-r.answers:
			if a.err == nil {
				cancel() // stored: the tries still waiting need not go on
			}
			if wait, ok := r.take(a); ok {
				again.Reset(wait)
			}
		case <-again.C:
			if !r.settled {
				again.Reset(r.try(ctx))
			}
		case <-stop:
			// Send no more tries, but wait for those sent: one may have
			// been stored, and Release needs the revision.
			stop, r.settled = nil, true
		case <-lost:
			lost, r.settled = nil, true
			cancel()
		}
	}
	return r.best.next, r.best.sent, r.best.err
}

// renewal is one renewal of a lease at rev, from renewOnce's goroutine:
// its tries, how many wait for their answer, and the best answer so far.
type renewal struct {
	lease    *Lease
	rev      uint64
	deadline time.Time
	answers  chan renewAnswer // each try's, unbuffered: renewOnce takes them all
	inflight int              // tries sent and not answered
	// best is the success with the highest revision, else a finding that
	// the lock is taken, else the last error. A success wins over a
	// finding: tries run at once, and one that adopts the revision another
	// stored can find the key moved on by a third; while the lock is
	// another's, no try of this lease can succeed.
	best renewAnswer
	// settled says to send no more tries: one was stored, the lock is
	// taken, or the lease was stopped or lost.
	settled bool
}

// renewAnswer is one try's answer: the revision it stored and when it
// was sent, or its error.
type renewAnswer struct {
	next uint64
	sent time.Time
	err  error
}

// try sends one more try, on a goroutine of its own that answers on
// r.answers within ctx, and returns how long to wait for it before the
// next: a third of the time left to the deadline, at least TTL/10.
func (r *renewal) try(ctx context.Context) time.Duration {
	cfg := r.lease.lock.cfg
	r.inflight++
	sent := time.Now()
	go func() {
		next, err := r.lease.lock.bucket.CompareAndSet(ctx, cfg.Key, r.lease.value, r.rev)
		if errors.Is(err, ErrRevisionMismatch) {
			next, err = r.lease.adopt(ctx, r.rev)
		}
		r.answers <- renewAnswer{next, sent, err}
	}()
	left := r.deadline.Sub(sent)
	return min(left, max(left/3, cfg.TTL/10))
}

// take counts a try's answer a into best and settled. After a quick
// failure with no try left waiting it returns, with ok, the wait before
// the next try: until TTL/20 after the failed one was sent.
func (r *renewal) take(a renewAnswer) (wait time.Duration, ok bool) {
	r.inflight--
	switch {
	case a.err == nil:
		if r.best.err != nil || a.next > r.best.next {
			r.best = a
		}
		r.settled = true
	case r.best.err == nil: // a success is kept
	case errors.Is(a.err, ErrRevisionMismatch), errors.Is(a.err, ErrKeyNotFound):
		// Send no more, but let the tries in flight tell.
		r.best, r.settled = a, true
	case !r.settled:
		r.best = a
		if r.inflight == 0 {
			return time.Until(a.sent.Add(r.lease.lock.cfg.TTL / 20)), true
		}
	}
	return 0, false
}

// adopt renews once more after a renewal found another revision than rev:
// when the key still holds this lease's value, an earlier renewal was stored
// and only its answer lost (a timeout, a leader change), and the lease is
// still this one's. Any other finding is returned as the mismatch.
func (s *Lease) adopt(ctx context.Context, rev uint64) (uint64, error) {
	e, err := s.lock.bucket.Get(ctx, s.lock.cfg.Key)
	switch {
	case errors.Is(err, ErrKeyNotFound), err == nil && (e.Value != s.value || e.Revision <= rev):
		return 0, fmt.Errorf("%w: %s at revision %d", ErrRevisionMismatch, s.lock.cfg.Key, rev)
	case err != nil:
		return 0, err // not known: the next renewal looks again
	}
	return s.lock.bucket.CompareAndSet(ctx, s.lock.cfg.Key, s.value, e.Revision)
}
