package tasks

import (
	"fmt"
)

// Wire names of a queue's streams, bucket and subjects. A held record is
// stored on a subject of its own, task first, so that a claim checks
// "no record for this task" with one wildcard and recovery lists "every
// record of this worker" with another.
const (
	heldStreamTmpl    = "%s_HELD"                        // the queue's stream name
	heldSubjectTmpl   = "corral.tasks.%s.held.%s.%s"     // queue, task token, worker
	heldByTaskTmpl    = "corral.tasks.%s.held.%s.*"      // queue, task token
	heldByWorkerTmpl  = "corral.tasks.%s.held.*.%s"      // queue, worker
	heldAllTmpl       = "corral.tasks.%s.held.>"         // queue
	cancelTmpl        = "corral.tasks.%s.held.%s.cancel" // queue, task token: its cancel marker (no lease id is "cancel")
	cancelsTmpl       = "corral.tasks.%s.held.*.cancel"  // queue: every cancel marker
	progressTmpl      = "corral.tasks.%s.progress.%s"    // queue, task token: its latest progress
	progressAllTmpl   = "corral.tasks.%s.progress.*"     // queue
	waitingAllTmpl    = "corral.tasks.%s.t.>"            // queue: waiting copies and one-shot schedules
	waitingTmpl       = "corral.tasks.%s.t.%d.%s"        // queue, slot, task token: a waiting copy
	slotTmpl          = "corral.tasks.%s.t.%d.*"         // queue, slot: the copies waiting in it
	waitingByTaskTmpl = "corral.tasks.%s.t.*.%s"         // queue, task token: its copy waiting, or its schedule
	scheduledTmpl     = "corral.tasks.%s.t.at.%s"        // queue, task token: its one-shot schedule
	periodicAllTmpl   = "corral.tasks.%s.periodic.*"     // queue: periodic schedules
	periodicTmpl      = "corral.tasks.%s.periodic.%s"    // queue, schedule name
	queuesPattern     = "corral.tasks.*.>"               // every queue's own subjects
	leaseBucketTmpl   = "corral_tasks_%s"                // queue
	leaseKeyTmpl      = "w.%s"                           // worker
	leaseKeysPattern  = "w.*"
	recovererKey      = "recoverer"
	// oldConsumerName is the one unfiltered consumer of the queue's
	// previous layout, deleted when a worker declares the queue.
	oldConsumerName = "workers"
)

// Headers a task carries in the queue.
const (
	// TaskIDHeader is the task's identity, the same on every copy of it
	// the queue writes. A task enqueued is known by its Nats-Msg-Id.
	TaskIDHeader = "Corral-Task-Id"
	// AttemptHeader counts the times the task was put back in the queue
	// (handed back, retried or recovered): a copy whose attempt is above
	// its held record's is what its holder put back, not a duplicate.
	AttemptHeader = "Corral-Task-Attempt"
	// FailuresHeader counts the task's failed runs.
	FailuresHeader = "Corral-Task-Failures"
	// NotBeforeHeader is when the task may run again (unix nanoseconds),
	// on copies an earlier version put back after a hand-back with a delay
	// or a failure's backoff; a worker passes them over until then.
	//
	// Deprecated: such a put-back is now a message schedule that puts the
	// copy in the queue at that time; the header is only read.
	NotBeforeHeader = "Corral-Task-Not-Before"
	// AvoidHeader names the worker that put the task back: it takes the
	// task only if no other does.
	AvoidHeader = "Corral-Task-Avoid"
)

// Headers of held records.
const (
	// scheduleNameHeader names the periodic schedule a schedule message
	// is, and a task it enqueued comes from; scheduleDefHeader is the
	// schedule's digest (Schedule.definition).
	scheduleNameHeader = "Corral-Task-Schedule"
	scheduleDefHeader  = "Corral-Task-Schedule-Def"
	stateHeader        = "Corral-Task-State"
	workerHeader       = "Corral-Task-Worker"
	processHeader      = "Corral-Task-Process" // the worker's Config.Process
	lastErrorHeader    = "Corral-Task-Error"
	// nonceHeader is the EnqueueTask call a copy, record or tombstone
	// comes from: a retry of a failed task under its id has another one
	// than the run that failed, and a duplicate than the task it repeats.
	nonceHeader = "Corral-Task-Nonce"
	// copyHeader is the queue stream's sequence of the copy a record was
	// claimed from, or, on a cancel marker, the queue's last sequence when
	// it was written: a copy stored after it is a task enqueued again.
	copyHeader     = "Corral-Task-Copy"
	stateHeld      = "held"
	stateDone      = "done"
	stateFailed    = "failed"
	stateCancelled = "cancelled" // a cancel marker, or the tombstone of a run it cut short
)

// names are the wire names of one queue.
type names struct {
	queue       string
	heldStream  string
	leaseBucket string
}

func newNames(queue string, cfg Config) names {
	return names{queue: queue, heldStream: fmt.Sprintf(heldStreamTmpl, cfg.Stream), leaseBucket: fmt.Sprintf(leaseBucketTmpl, queue)}
}

// held is the subject of task id's record held by worker.
func (n names) held(id, worker string) string {
	return fmt.Sprintf(heldSubjectTmpl, n.queue, token(id), worker)
}
func (n names) heldByTask(id string) string  { return fmt.Sprintf(heldByTaskTmpl, n.queue, token(id)) }
func (n names) heldByWorker(w string) string { return fmt.Sprintf(heldByWorkerTmpl, n.queue, w) }
func (n names) heldAll() string              { return fmt.Sprintf(heldAllTmpl, n.queue) }

// progress is the subject of task id's latest progress.
func (n names) progress(id string) string { return fmt.Sprintf(progressTmpl, n.queue, token(id)) }

// cancel is the subject of task id's cancel marker.
func (n names) cancel(id string) string { return fmt.Sprintf(cancelTmpl, n.queue, token(id)) }

// scheduledAll matches every schedule of a task, each a subject under
// scheduledPrefix.
func (n names) scheduledAll() string    { return n.scheduledPrefix() + "*" }
func (n names) scheduledPrefix() string { return fmt.Sprintf(scheduledTmpl, n.queue, "") }

// scheduled is the subject of task id's schedule: it waits there until
// its time, one schedule per task.
func (n names) scheduled(id string) string { return fmt.Sprintf(scheduledTmpl, n.queue, token(id)) }

// waitingByTask matches task id's copy waiting in any slot, and its
// schedule.
func (n names) waitingByTask(id string) string {
	return fmt.Sprintf(waitingByTaskTmpl, n.queue, token(id))
}

// waiting is the subject of task id's copy waiting in slot s.
func (n names) waiting(s slot, id string) string {
	return fmt.Sprintf(waitingTmpl, n.queue, s, token(id))
}
func leaseKey(worker string) string { return fmt.Sprintf(leaseKeyTmpl, worker) }
