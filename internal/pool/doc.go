// Package pool runs items of one kind on a bounded queue drained by a fixed
// set of workers: the worker pool under every Corral handler, and under
// any package that runs work handed to it by NATS.
//
// # Overview
//
// A [Pool] is generic over its item type and runs one kind of [Work]:
// Handle runs an item, Settle finishes it with Handle's result, Return
// takes back an item the pool will not run because it is stopping, and
// ReportPanic hears of the panics the pool recovers. Core NATS messages,
// JetStream messages and long-running tasks are three kinds of Work:
//
//	inputs (subscriptions, feeders) -> queue (QueueSize) -> Workers goroutines -> Handle -> Settle
//
// The pool owns what every kind shares: the queue and its put policies
// ([Pool.TryPut], [Pool.Put], [Pool.Evict]), the per-item timeout, panic
// recovery into a *supervisor.PanicError (counted, reported at most once a
// second with the number suppressed), latency sampling and the processing
// counters ([Stats]), and the stop protocol.
//
// Long-running tasks fit the same shape: Workers is the process's maximum
// number of tasks at once (thousands of goroutines are cheap), Timeout is
// zero, Handle runs a task for as long as it takes (the task package
// confirms it when taken and keeps every held task alive with one
// heartbeat of its own), Return hands a queued task back at stop, and
// [Pool.CutOff] tells a task cancelled by the stop's deadline from one
// that failed.
//
// # Lifecycle
//
// [New] builds a complete pool; [Pool.Start] lets its workers run, and
// they start with its queue at the first put, so that a pool waiting for
// its first item costs no goroutine and no queue; inputs register with
// [Pool.AddInput] or [Pool.Feed] before they put anything. An input that
// is the pool's only worker (a subscription whose goroutine runs the
// handler) calls [Pool.Run] instead of putting: the item runs on its
// goroutine, with the timeout, recovery and counts a worker gives it.
// [Pool.Stop] waits for every input to end, closes the queue and lets the
// workers run it down: until its deadline they handle what is queued,
// unless [Pool.Abort] was called, in which case what is queued goes to
// Return at once and only the items running may finish. At the deadline
// the pool stops hard: what is still queued goes to Return, the handlers'
// ctx is cancelled, and a Put waiting for room gives up. A pool is used
// for one run: it is not started again after Stop.
//
// # Configuration
//
// [Config] sets the number of workers, the queue's size, the per-item
// timeout and the [Stats] the pool counts in, which may outlive it.
//
// # Errors
//
// [Pool.Put] returns [ErrStopped] once the stop's deadline has passed, or
// its ctx's error. A handler's error is Work's to act on in Settle; a
// panic in Handle reaches Settle as a *supervisor.PanicError.
//
// # Concurrency
//
// Puts, Run, Evict, Len, Cap, Abort, CutOff and the Stats readers are safe for
// concurrent use. Start and Stop are called once each, by the pool's
// owner, which must not add inputs once Stop has begun. Handle and Settle
// run on the workers, up to Workers at once; Return runs on a worker or
// on the goroutine calling Stop, possibly at the same time.
package pool
