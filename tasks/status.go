package tasks

import (
	"time"

	"github.com/corral-go/corral/internal/pool"
)

// LeaseState is where a worker's lease is.
type LeaseState string

const (
	// LeaseStateHeld means the worker holds a lease and takes tasks under it.
	LeaseStateHeld LeaseState = "held"
	// LeaseStateLost means the worker could not renew its lease in time:
	// it stopped its tasks and takes a new lease when it is served again.
	LeaseStateLost LeaseState = "lost"
	// LeaseStateNone means the worker is not serving.
	LeaseStateNone LeaseState = "none"
)

// Status is a snapshot of a worker.
type Status struct {
	Queue string
	// Worker is the identity of the worker's current lease; empty before
	// the first.
	Worker string
	// Process is the worker's Config.Process, with its default: the name
	// of the process it runs in.
	Process string
	Lease   LeaseState
	// Renewed is when the lease was last renewed: the last heartbeat the
	// server stored.
	Renewed time.Time
	// Capacity is MaxConcurrency; Held counts the tasks held now, running
	// or taken and about to run: at most Capacity plus those taken ahead
	// (Config.Prefetch).
	Capacity int
	Held     int
	// Recoverer is true while this worker recovers the tasks of dead ones.
	Recoverer bool
	Counters  Counters
}

// Counters are a worker's counts since it was made.
type Counters struct {
	// Started counts the tasks run; Completed those whose run returned
	// nil and was recorded, or, for a run that ended before its claim
	// (Config.ClaimAfter), whose copy was acked.
	Started, Completed uint64
	// Failed counts runs that returned an error or panicked; HandedBack
	// the tasks put back in the queue by a hand-back or a stop.
	Failed, HandedBack uint64
	// Duplicates counts copies of tasks held or finished elsewhere,
	// dropped.
	Duplicates uint64
	// PassedOver counts copies the worker let go without claiming them:
	// not due yet, put back by the worker itself and left for others, or
	// taken ahead and given back after waiting too long for a slot.
	PassedOver uint64
	// Rejected counts outcomes not recorded because the task was no longer
	// the worker's: its lease was lost.
	Rejected uint64
	// Unconfirmed counts outcomes whose write got no answer before the
	// worker stopped or lost its lease: the server may have stored them or
	// not. The task's record says which (it is done, or the task runs
	// again), so Completed can fall short of the tasks this worker did.
	Unconfirmed uint64
	// Recovered counts the tasks of dead workers this worker put back in
	// the queue as the recoverer.
	Recovered uint64
	// LeasesLost counts the times the worker lost its lease (each a
	// LeaseLost event).
	LeasesLost uint64
	// Cancelled counts the tasks Queue.Cancel stopped here: a run cut
	// short, or a copy dropped before it ran.
	Cancelled uint64
}

// Histogram is a cumulative histogram of sampled durations (see
// Worker.Durations).
type Histogram = pool.Histogram

// Durations reads the histogram of the worker's runs at bounds, which
// must ascend: each from the copy's start in a slot to the handler's
// return, the claim included, across every lease the worker has held.
// Runs are sampled as a JetStream handler's calls are: every run after
// one slower than 20µs, one in eight of faster ones, each sample counting
// for the runs it stands for.
func (w *Worker) Durations(bounds []time.Duration) Histogram { return w.runs.Histogram(bounds) }

// Status returns a snapshot of the worker.
func (w *Worker) Status() Status {
	st := Status{Queue: w.queue, Process: w.cfg.Process, Lease: LeaseStateNone, Capacity: w.cfg.MaxConcurrency, Counters: Counters{
		Started: w.stats.started.Load(), Completed: w.stats.completed.Load(), Failed: w.stats.failed.Load(),
		HandedBack: w.stats.handedBack.Load(), Duplicates: w.stats.duplicates.Load(), PassedOver: w.stats.passedOver.Load(),
		Rejected: w.stats.rejected.Load(), Unconfirmed: w.stats.unconfirmed.Load(), Recovered: w.stats.recovered.Load(),
		LeasesLost: w.stats.leasesLost.Load(), Cancelled: w.stats.cancelled.Load()}}
	r := w.current.Load()
	if r == nil {
		return st
	}
	st.Worker, st.Held, st.Renewed = r.id, r.held(), r.lease.Renewed()
	st.Recoverer = r.recoverer.elected.Load()
	switch {
	case r.lost():
		st.Lease = LeaseStateLost
	case r.serving.Load():
		st.Lease = LeaseStateHeld
	}
	return st
}
