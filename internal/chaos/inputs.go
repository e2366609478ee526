package chaos

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/corral-go/corral/publisher"
	"github.com/corral-go/corral/tasks"
)

// The task inputs a careless or hostile user gives: ids that are no
// subject token or look like the queue's own encoding, a task near the
// largest a queue carries, and a handler error far longer than a header.
const (
	// dataSep ends a task's ledger id in its data; padding may follow.
	dataSep = "|"
	// longErrorPrefix marks the tasks whose first run fails with an error
	// of longErrorLen bytes.
	longErrorPrefix = "t-err-"
	longErrorLen    = 100 << 10
	// bigTask fits in a queue of the default 1 MiB max payload; tooBig
	// does not (the largest is 1,047,199 bytes with a short id).
	bigTask, tooBig = 1_000_000, 1_100_000
)

// hostileIDs are accepted by Enqueue, and each must run once, as the one
// task it names: no two share a record, whatever they look like.
// yL1ph0KHvexxz8qfcCC9iB is what order:1 was once stored as.
var hostileIDs = []string{"order:1", "yL1ph0KHvexxz8qfcCC9iB", "dead-1.retry-1", "x:1", "x%3A1", "order%3A1", "a b", "zäh", "*", ">", "t.\x7e"}

// refusedIDs are refused by Enqueue: a reserved id behind a space, an id
// longer than any the queue takes, and white space at an end.
var refusedIDs = []string{" Corral-Task-put-back:x:1:1", strings.Repeat("i", 600), "tail ", "Corral-Task-seq-1"}

// TaskInputsFault enqueues, as a user of Enqueue could, tasks with
// hostile ids (each must run once, under its own id), a task near the
// largest a queue takes (it must run) and one over it (it must be
// refused at the call), a task whose first run fails with an error far
// longer than a header (it must run again and complete), and ids Enqueue
// must refuse. The checker finds a task lost, merged or run twice; a
// wedged slot shows at the end.
func (w *Workload) TaskInputsFault() Fault {
	return Fault{Name: "task-inputs", Effect: Keeps, Do: func() error {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		n := w.inputs.Add(1)
		for i, id := range hostileIDs {
			if err := w.enqueueInput(ctx, fmt.Sprintf("t-id-%d-%d", n, i), id, 0); err != nil {
				return err
			}
		}
		if err := w.enqueueInput(ctx, fmt.Sprintf("t-big-%d", n), fmt.Sprintf("big-%d", n), bigTask); err != nil {
			return err
		}
		if err := w.enqueueInput(ctx, fmt.Sprintf("%s%d", longErrorPrefix, n), fmt.Sprintf("err-%d", n), 0); err != nil {
			return err
		}
		for _, id := range append(refusedIDs, fmt.Sprintf("huge-%d", n)) {
			size := 0
			if strings.HasPrefix(id, "huge-") {
				size = tooBig
			}
			data := taskData("t-refused", size)
			_, err := w.pub.client.Enqueue(ctx, taskQueue, data, publisher.WithMsgID(id))
			if err == nil {
				return fmt.Errorf("Enqueue took task id %.40q of %d bytes, which the queue cannot run as given", id, len(data))
			}
			if !errors.Is(err, tasks.ErrReservedMsgID) && !errors.Is(err, tasks.ErrInvalidTaskID) && !errors.Is(err, tasks.ErrTaskTooLarge) {
				return fmt.Errorf("Enqueue refused task id %.40q with %v, not one of the tasks package's errors", id, err)
			}
		}
		return nil
	}}
}

// enqueueInput enqueues the task ledgered as ledgerID under the Msg-Id
// id, with its data padded to size bytes, and ledgers its ack. A refusal
// is the fault's failure: these tasks are valid.
func (w *Workload) enqueueInput(ctx context.Context, ledgerID, id string, size int) error {
	w.taskIDs.Store(ledgerID, id)
	w.ledger.Attempt(ledgerID)
	f, err := w.pub.client.Enqueue(ctx, taskQueue, taskData(ledgerID, size), publisher.WithMsgID(id))
	if err != nil {
		return fmt.Errorf("Enqueue of task id %q (%s): %w", id, ledgerID, err)
	}
	ack, err := f.Wait(ctx)
	if err != nil {
		w.ledger.Fail(ledgerID, err)
		return fmt.Errorf("task id %q (%s) not acknowledged: %w", id, ledgerID, err)
	}
	if ack.Duplicate {
		// The hostile ids are the same every round: within keep_completed
		// of an earlier round, the queue keeps the task it has under the
		// id, as Enqueue documents, and this one is not a new task.
		w.ledger.Duplicate(ledgerID)
		return nil
	}
	w.ledger.Ack(ledgerID, ack.Sequence, time.Now())
	return nil
}

// taskData is a task's data: its ledger id, padded with dataSep and more
// to size bytes.
func taskData(ledgerID string, size int) []byte {
	data := []byte(ledgerID)
	if size > len(data) {
		data = append(append(data, dataSep...), make([]byte, size-len(data)-len(dataSep))...)
	}
	return data
}

// taskInput checks a task as a worker runs it: its ledger id, read from
// its data; that it runs under the id it was enqueued with; and, for a
// task whose first run must fail with a long error, that error.
func (w *Workload) taskInput(t *tasks.Task) (id string, fail error) {
	id, _, _ = strings.Cut(string(t.Data()), dataSep)
	if want, ok := w.taskIDs.Load(id); ok && want.(string) != t.ID() {
		w.ledger.Finding("task %s ran as id %q, enqueued as %q", id, t.ID(), want)
	}
	if strings.HasPrefix(id, longErrorPrefix) && t.Attempt() == 1 {
		return id, errors.New(strings.Repeat("e", longErrorLen))
	}
	return id, nil
}

// Wedged returns the task slots the workers hold with no task running in
// them, once every task has settled: it waits, for at most limit, for
// that to reach 0, and returns what it last saw.
func (w *Workload) Wedged(limit time.Duration) int {
	deadline := time.Now().Add(limit)
	for {
		held := 0
		w.mu.Lock()
		for _, a := range w.workers {
			for _, t := range a.client.Status().Tasks {
				held += t.Held
			}
		}
		w.mu.Unlock()
		wedged := held - int(w.runningTasks.Load())
		if wedged <= 0 || time.Now().After(deadline) {
			return max(wedged, 0)
		}
		time.Sleep(50 * time.Millisecond) // polling the workers' status, which no event announces
	}
}
