package consumer

import (
	"context"
	"math/rand/v2"
	"time"
)

// tend keeps the run's held messages alive and reads its consumer's
// ack-pending count, from one goroutine for both, until stop is closed.
//
// Keeping alive: every held message, running or queued, that the server
// last heard of a third of an ack wait ago or more gets an in-progress
// ack. The tick is a sixth of the ack wait, so an ack goes out by half the
// ack wait at the latest: the other half is margin for a loaded machine
// or network.
//
// Reading ack pending: every ackPendingEvery, from a goroutine of its own
// while the call lasts (up to the API timeout, longer than a short ack
// wait), so that a slow server never holds the keep-alives back.
func (r *jsRun) tend(ctx context.Context, stop <-chan struct{}, done chan<- struct{}) {
	defer close(done)
	// The tick follows the ack wait, which changes when a bound consumer
	// is read again.
	tick := func() time.Duration { return max(time.Duration(r.ackWait.Load())/6, 10*time.Millisecond) }
	keepT := time.NewTimer(tick())
	defer keepT.Stop()
	// A random phase, so that a fleet's instances, started together, do
	// not all ask the server at once.
	readT := time.NewTimer(rand.N(ackPendingEvery) + time.Millisecond)
	defer readT.Stop()
	var reading chan struct{} // closed when the read in flight is done; nil: none
	defer func() {
		if reading != nil {
			<-reading
		}
	}()
	var due []*Msg
	for {
		select {
		case <-stop:
			return
		case now := <-keepT.C:
			keepT.Reset(tick())
			ackWait := time.Duration(r.ackWait.Load())
			due = r.held.due(now, ackWait/3, due[:0])
			for _, m := range due {
				if m.InProgress() == nil {
					r.j.stats.inProgress.Add(1)
				}
			}
		case <-readT.C:
			readT.Reset(ackPendingEvery)
			if reading != nil {
				select {
				case <-reading:
				default:
					continue // the last read is still waiting for the server
				}
			}
			reading = make(chan struct{})
			go func(finished chan struct{}) {
				defer close(finished)
				r.readAckPending(ctx)
			}(reading)
		}
	}
}
