package main

import (
	"context"
	"errors"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/corral-go/corral/consumer"
	"github.com/corral-go/corral/tasks"
)

// work is what the processes run, and what the run learns of it.
type work struct {
	release chan struct{} // lets the slow tasks end
	healed  atomic.Bool   // the failing tasks succeed from now on
	paused  atomic.Bool   // the queue and the handler are paused

	mu            sync.Mutex
	done          map[string]int // completions by task id
	orders        map[string]int // orders handled, by sequence
	whilePaused   int            // tasks started or orders delivered while paused
	runsCancelled int
}

func newWork() *work {
	return &work{release: make(chan struct{}), done: map[string]int{}, orders: map[string]int{}}
}

var errBoom = errors.New("boom")

func (w *work) task(ctx context.Context, t *tasks.Task) error {
	w.mu.Lock()
	if w.paused.Load() && !strings.HasPrefix(t.ID(), "slow-") {
		w.whilePaused++
	}
	w.mu.Unlock()
	switch {
	case strings.HasPrefix(t.ID(), "fail-") && !w.healed.Load():
		return errBoom
	case strings.HasPrefix(t.ID(), "slow-"):
		select {
		case <-w.release:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	w.mu.Lock()
	w.done[t.ID()]++
	w.mu.Unlock()
	return nil
}

func (w *work) order(_ context.Context, m *consumer.Msg) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.paused.Load() {
		w.whilePaused++
	}
	w.orders[string(m.Data())]++
	return nil
}

// completed counts the tasks completed with prefix, and those completed
// more than once.
func (w *work) completed(prefix string) (n, twice int) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for id, c := range w.done {
		if strings.HasPrefix(id, prefix) {
			n++
			if c > 1 {
				twice++
			}
		}
	}
	return n, twice
}

func (w *work) handled() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.orders)
}
