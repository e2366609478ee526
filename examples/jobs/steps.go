package main

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/corral-go/corral/examples/internal/procs"
	"github.com/corral-go/corral/tasks"
)

// scheduled enqueues 200 tasks for 2 to 4 s ahead and waits until each
// ran: none may start before its time.
func scheduled(ctx context.Context, w *worker, _ *tasks.Queue, j *journal, s *summary) error {
	const n = 200
	at := map[string]time.Time{}
	start := time.Now()
	for i := range n {
		id := fmt.Sprintf("at-%d", i)
		at[id] = start.Add(2*time.Second + time.Duration(i)*10*time.Millisecond)
		if err := enqueue(ctx, w, id, "at", tasks.At(at[id])); err != nil {
			return err
		}
		j.expect(id)
	}
	err := procs.Until(ctx, 100*time.Millisecond, func() bool {
		for id := range at {
			if len(j.runs(id)) == 0 {
				return false
			}
		}
		return true
	})
	if err != nil {
		return fmt.Errorf("scheduled tasks: %w", err)
	}
	var late []time.Duration
	for id, due := range at {
		r := j.runs(id)[0]
		if r.Before(due) {
			s.early++
		}
		late = append(late, r.Sub(due))
	}
	slices.Sort(late)
	s.scheduled, s.lateP99 = n, late[len(late)*99/100]
	return nil
}

// cancelled fills both workers with tasks, 25 of which run until they
// are cancelled; then it enqueues 25 more, which wait, and cancels all 50.
func cancelled(ctx context.Context, w *worker, q *tasks.Queue, j *journal, s *summary) error {
	const each = 25
	capacity := 64 + 16
	for i := range capacity - each {
		id := fmt.Sprintf("fill-%d", i)
		if err := enqueue(ctx, w, id, "fill"); err != nil {
			return err
		}
		j.expect(id)
	}
	var running, waiting []string
	for i := range each {
		running = append(running, fmt.Sprintf("running-%d", i))
		if err := enqueue(ctx, w, running[i], "cancel"); err != nil {
			return err
		}
	}
	if err := procs.Until(ctx, 50*time.Millisecond, func() bool {
		for _, id := range running {
			if len(j.runs(id)) == 0 {
				return false
			}
		}
		return true
	}); err != nil {
		return fmt.Errorf("the tasks to cancel while they run never all ran: %w", err)
	}
	for i := range each {
		waiting = append(waiting, fmt.Sprintf("waiting-%d", i))
		if err := enqueue(ctx, w, waiting[i], "cancel"); err != nil {
			return err
		}
	}
	for _, id := range append(waiting, running...) {
		if _, err := q.Cancel(ctx, id); err != nil {
			return fmt.Errorf("cancel %s: %w", id, err)
		}
	}
	j.open("fill")
	for _, id := range append(waiting, running...) {
		wctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		i, err := q.Wait(wctx, id)
		cancel()
		switch {
		case err != nil:
			return fmt.Errorf("wait for %s: %w", id, err)
		case i.State == tasks.StateCancelled:
			s.cancelled++
		}
	}
	for _, id := range waiting {
		if len(j.runs(id)) > 0 {
			s.ranAfterCancel++
		}
	}
	s.ranAfterCancel += j.ranToCompletion()
	return nil
}

// results runs 100 tasks that report progress and return the digest of
// their data, and reads each result back by the task's id.
func results(ctx context.Context, w *worker, q *tasks.Queue, j *journal, s *summary) error {
	const n = 100
	for i := range n {
		id := fmt.Sprintf("result-%d", i)
		if err := enqueue(ctx, w, id, fmt.Sprintf("result %d", i)); err != nil {
			return err
		}
		j.expect(id)
	}
	for i := range n {
		id := fmt.Sprintf("result-%d", i)
		info, err := q.Wait(ctx, id)
		if err != nil {
			return fmt.Errorf("wait for %s: %w", id, err)
		}
		sum := sha256.Sum256(fmt.Appendf(nil, "result %d", i))
		if info.State == tasks.StateCompleted && string(info.Result) == string(sum[:]) && len(info.Progress) == 1 && info.Progress[0] == 10 {
			s.results++
		} else {
			s.resultsWrong++
		}
	}
	return nil
}

// duplicates enqueues 100 ids twice: the second enqueue of each is
// refused, saying where the first is.
func duplicates(ctx context.Context, w *worker, _ *tasks.Queue, j *journal, s *summary) error {
	const n = 100
	for i := range n {
		id := fmt.Sprintf("dup-%d", i)
		if err := enqueue(ctx, w, id, "dup"); err != nil {
			return err
		}
		j.expect(id)
		if err := enqueue(ctx, w, id, "dup again"); errors.Is(err, tasks.ErrDuplicate) {
			s.duplicatesRefused++
		} else if err != nil {
			return err
		}
	}
	return nil
}

// periodic waits until the schedule both workers declared has ticked ten
// times.
func periodic(ctx context.Context, _ *worker, _ *tasks.Queue, j *journal, s *summary) error {
	err := procs.Until(ctx, 100*time.Millisecond, func() bool { ticks, _ := j.tickCounts(); return ticks >= 10 })
	s.ticks, s.tickDuplicates = j.tickCounts()
	if err != nil {
		return fmt.Errorf("%d periodic ticks: %w", s.ticks, err)
	}
	return nil
}

// recovery has a third worker hold 50 long tasks while the others are
// full and 1,000 tasks wait, then cuts its connection for good: its
// tasks come back before the backlog.
func recovery(ctx context.Context, url string, a, b *worker, q *tasks.Queue, j *journal, s *summary) error {
	for i := range 64 + 16 {
		id := fmt.Sprintf("hold-%d", i)
		if err := enqueue(ctx, a, id, "hold"); err != nil {
			return err
		}
		j.expect(id)
	}
	if err := procs.Until(ctx, 50*time.Millisecond, func() bool { return a.status().Held+b.status().Held == 64+16 }); err != nil {
		return fmt.Errorf("the workers never held a full load: %w", err)
	}
	c, err := startWorker(ctx, url, "c", 50, j.handler("c"))
	if err != nil {
		return err
	}
	defer c.Stop()
	var long []string
	for i := range 50 {
		long = append(long, fmt.Sprintf("long-%d", i))
		if err := enqueue(ctx, a, long[i], "long"); err != nil {
			return err
		}
		j.expect(long[i])
	}
	if err := procs.Until(ctx, 50*time.Millisecond, func() bool { return c.status().Held == 50 }); err != nil {
		return fmt.Errorf("the third worker never held its 50 tasks: %w", err)
	}
	for i := range 1000 {
		id := fmt.Sprintf("short-%d", i)
		if err := enqueue(ctx, a, id, "short"); err != nil {
			return err
		}
		j.expect(id)
	}
	cut := time.Now()
	c.Link.Cut()
	j.open("hold")
	var last time.Time
	err = procs.Until(ctx, 20*time.Millisecond, func() bool {
		for _, id := range long {
			r := j.runs(id)
			if len(r) < 2 {
				return false
			}
			if at := r[len(r)-1]; at.After(last) {
				last = at
			}
		}
		return true
	})
	if err != nil {
		return fmt.Errorf("the cut-off worker's tasks did not all run again: %w", err)
	}
	s.recovery = last.Sub(cut)
	return nil
}
