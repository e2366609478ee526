package pool_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/corral-go/corral/internal/pool"
)

// failureWork is a work that fails every item and hears of failures.
type failureWork struct {
	*work
	mu      sync.Mutex
	reports []uint64 // each report's suppressed count
	items   []int    // each report's item
}

func (w *failureWork) ReportFailure(item int, err error, suppressed uint64) {
	if err == nil || err.Error() != "refused" {
		panic("a failure reported with another error")
	}
	w.mu.Lock()
	w.reports = append(w.reports, suppressed)
	w.items = append(w.items, item)
	w.mu.Unlock()
}

func (w *failureWork) reported() []uint64 {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]uint64(nil), w.reports...)
}

func (w *failureWork) reportedItems() []int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]int(nil), w.items...)
}

// A work that is a FailureReporter hears of the first failure at once and
// of the next a second later at the earliest, that report counting every
// failure in between: no failure is reported twice or left out of the
// count.
func TestFailuresAreReportedOnceASecond(t *testing.T) {
	t.Parallel()
	w := &failureWork{work: newWork(func(context.Context, int) error { return errors.New("refused") })}
	p := pool.New[int](pool.Config{Workers: 1, QueueSize: 100}, w)
	p.Start()
	defer p.Stop(time.Now().Add(time.Second))
	const burst = 20
	for i := range burst {
		put(t, p, i)
	}
	w.wait(t, burst)
	if r := w.reported(); len(r) != 1 || r[0] != 0 {
		t.Fatalf("reports after a burst of %d: got %v, want one, suppressing none", burst, r)
	}
	// More failures, one at a time, until the second report.
	sent := burst
	deadline := time.Now().Add(10 * time.Second)
	for len(w.reported()) < 2 {
		if time.Now().After(deadline) {
			t.Fatalf("no second report in 10s: %v", w.reported())
		}
		put(t, p, sent)
		w.wait(t, 1)
		sent++
	}
	// One worker fails the items in order, and an item is settled before
	// its failure is counted: the second report stands for every failure
	// up to its own item, and those after it are the next report's.
	r, items := w.reported(), w.reportedItems()
	if len(r) != 2 || items[0] != 0 || 1+r[0]+1+r[1] != uint64(items[1])+1 {
		t.Fatalf("reports %v of items %v: want two that stand for every failure up to the second's item", r, items)
	}
}
