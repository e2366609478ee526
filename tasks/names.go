package tasks

import (
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"strconv"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// Wire names of a queue's streams, bucket and subjects. A held record is
// stored on a subject of its own, task first, so that a claim checks
// "no record for this task" with one wildcard and recovery lists "every
// record of this worker" with another.
const (
	heldStreamTmpl    = "%s_HELD"                    // the queue's stream name
	heldSubjectTmpl   = "corral.tasks.%s.held.%s.%s" // queue, task, worker
	heldByTaskTmpl    = "corral.tasks.%s.held.%s.*"  // queue, task
	heldByWorkerTmpl  = "corral.tasks.%s.held.*.%s"  // queue, worker
	heldAllTmpl       = "corral.tasks.%s.held.>"     // queue
	leaseBucketTmpl   = "corral_tasks_%s"            // queue
	leaseKeyTmpl      = "w.%s"                       // worker
	leaseKeysPattern  = "w.*"
	recovererKey      = "recoverer"
	queueConsumerName = "workers"
)

// Headers a task carries in the queue.
const (
	// TaskIDHeader is the task's identity, the same on every copy of it.
	// A task enqueued without it is known by its Nats-Msg-Id.
	TaskIDHeader = "Corral-Task-Id"
	// AttemptHeader counts the times the task was put back in the queue
	// (handed back, retried or recovered): a copy whose attempt is above
	// its held record's is what its holder put back, not a duplicate.
	AttemptHeader = "Corral-Task-Attempt"
	// FailuresHeader counts the task's failed runs.
	FailuresHeader = "Corral-Task-Failures"
	// NotBeforeHeader is when the task may run again (unix nanoseconds),
	// after a hand-back with a delay or a failure's backoff.
	NotBeforeHeader = "Corral-Task-Not-Before"
	// AvoidHeader names the worker that put the task back: it takes the
	// task only if no other does.
	AvoidHeader = "Corral-Task-Avoid"
)

// Headers of held records.
const (
	stateHeader      = "Corral-Task-State"
	workerHeader     = "Corral-Task-Worker"
	lastErrorHeader  = "Corral-Task-Error"
	stateHeld        = "held"
	stateDone        = "done"
	stateFailed      = "failed"
	maxTaskIDLength  = 64
	hashedTaskIDSize = 22 // base64 characters of a SHA-256 prefix: 132 bits
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

func (n names) held(task, worker string) string {
	return fmt.Sprintf(heldSubjectTmpl, n.queue, task, worker)
}
func (n names) heldByTask(task string) string { return fmt.Sprintf(heldByTaskTmpl, n.queue, task) }
func (n names) heldByWorker(w string) string  { return fmt.Sprintf(heldByWorkerTmpl, n.queue, w) }
func (n names) heldAll() string               { return fmt.Sprintf(heldAllTmpl, n.queue) }
func leaseKey(worker string) string           { return fmt.Sprintf(leaseKeyTmpl, worker) }

// taskID is the identity of the task in msg, stable across every copy of
// it: the Corral-Task-Id it carries, or one made from its Nats-Msg-Id (as
// it is when token-safe and short, hashed otherwise), or from its stream
// sequence when it has neither.
func taskID(h nats.Header, seq uint64) string {
	if id := h.Get(TaskIDHeader); tokenSafe(id) {
		return id
	}
	id := h.Get(jetstream.MsgIDHeader)
	switch {
	case tokenSafe(id):
		return id
	case id != "":
		sum := sha256.Sum256([]byte(id))
		return base64.RawURLEncoding.EncodeToString(sum[:])[:hashedTaskIDSize]
	}
	return "seq-" + strconv.FormatUint(seq, 10)
}

// tokenSafe reports whether s can be one token of a subject as it is.
func tokenSafe(s string) bool {
	if s == "" || len(s) > maxTaskIDLength {
		return false
	}
	for _, r := range s {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_') {
			return false
		}
	}
	return true
}
