package consumer

import "time"

// keep sends in-progress acks for every held message, running or queued,
// that the server last heard of a third of an ack wait ago or more, from
// one goroutine for all of them, until stop is closed. It ticks every
// sixth of the ack wait, so an ack goes out by half the ack wait at the
// latest: the other half is margin for a loaded machine or network.
func (r *jsRun) keep(stop <-chan struct{}, done chan<- struct{}) {
	defer close(done)
	// The tick follows the ack wait, which changes when a bound consumer
	// is read again.
	tick := func() time.Duration { return max(time.Duration(r.ackWait.Load())/6, 10*time.Millisecond) }
	t := time.NewTimer(tick())
	defer t.Stop()
	var due []*Msg
	for {
		select {
		case <-stop:
			return
		case now := <-t.C:
			t.Reset(tick())
			ackWait := time.Duration(r.ackWait.Load())
			due = r.held.due(now, ackWait/3, due[:0])
			for _, m := range due {
				if m.InProgress() == nil {
					r.j.stats.inProgress.Add(1)
				}
			}
		}
	}
}
