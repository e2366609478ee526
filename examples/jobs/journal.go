package main

import (
	"context"
	"crypto/sha256"
	"strings"
	"sync"
	"time"

	"github.com/corral-go/corral/tasks"
)

// journal records every run the workers make, and opens the gates the
// blocking tasks wait at.
type journal struct {
	mu     sync.Mutex
	starts map[string][]time.Time // by task id
	on     map[string]string      // the worker that started it last
	ticks  map[string]int         // periodic ticks by id
	ended  map[string]bool        // cancellable runs that reached their end
	gates  map[string]chan struct{}
	ids    []string // every id enqueued that must complete
}

func newJournal() *journal {
	return &journal{starts: map[string][]time.Time{}, on: map[string]string{}, ticks: map[string]int{},
		ended: map[string]bool{}, gates: map[string]chan struct{}{"fill": make(chan struct{}), "hold": make(chan struct{})}}
}

// expect notes ids as tasks that must complete.
func (j *journal) expect(ids ...string) {
	j.mu.Lock()
	defer j.mu.Unlock()
	j.ids = append(j.ids, ids...)
}

// open opens the gate the tasks of kind wait at.
func (j *journal) open(kind string) { close(j.gates[kind]) }

// started records a run of id on worker, and returns how many there were.
func (j *journal) started(id, worker string) int {
	j.mu.Lock()
	defer j.mu.Unlock()
	j.starts[id] = append(j.starts[id], time.Now())
	j.on[id] = worker
	return len(j.starts[id])
}

// runs is the start times of task id's runs.
func (j *journal) runs(id string) []time.Time {
	j.mu.Lock()
	defer j.mu.Unlock()
	return append([]time.Time(nil), j.starts[id]...)
}

// handler is worker's handler: what a task does is its data's kind.
func (j *journal) handler(worker string) tasks.Handler {
	return tasks.HandlerFunc(func(ctx context.Context, t *tasks.Task) error {
		if t.Schedule() == "tick" {
			j.mu.Lock()
			j.ticks[t.ID()]++
			j.mu.Unlock()
			return nil
		}
		j.started(t.ID(), worker)
		kind, _, _ := strings.Cut(string(t.Data()), " ")
		switch kind {
		case "fill", "hold": // a load that keeps the worker full until let go
			select {
			case <-j.gates[kind]:
			case <-ctx.Done():
				return ctx.Err()
			}
		case "cancel": // runs until cancelled
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-time.After(time.Minute):
				j.mu.Lock()
				j.ended[t.ID()] = true
				j.mu.Unlock()
			}
		case "long": // on the worker that is cut off, runs until it is
			if worker == "c" {
				<-ctx.Done()
				return ctx.Err()
			}
		case "short":
			select {
			case <-time.After(500 * time.Millisecond):
			case <-ctx.Done():
				return ctx.Err()
			}
		case "result":
			for i := 1; i <= 10; i++ {
				if err := t.Progress([]byte{byte(i)}); err != nil {
					return err
				}
			}
			sum := sha256.Sum256(t.Data())
			return t.SetResult(sum[:])
		}
		return nil
	})
}

// lost counts the tasks expected to complete that the queue does not
// record as completed.
func (j *journal) lost(ctx context.Context, q *tasks.Queue) int {
	j.mu.Lock()
	ids := append([]string(nil), j.ids...)
	j.mu.Unlock()
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	lost := 0
	for _, id := range ids {
		i, err := q.Wait(ctx, id)
		if err != nil || i.State != tasks.StateCompleted {
			lost++
		}
	}
	return lost
}

// ranToCompletion counts the cancellable runs that ended on their own.
func (j *journal) ranToCompletion() int {
	j.mu.Lock()
	defer j.mu.Unlock()
	return len(j.ended)
}

// tickCounts is how many periodic ticks ran, and how many of them more
// than once.
func (j *journal) tickCounts() (ticks, twice int) {
	j.mu.Lock()
	defer j.mu.Unlock()
	for _, n := range j.ticks {
		if n > 1 {
			twice++
		}
	}
	return len(j.ticks), twice
}
