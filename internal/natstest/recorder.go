package natstest

import (
	"sync"
	"testing"
	"time"

	"github.com/corral-go/corral/supervisor"
)

// Recorder keeps every event passed to its Hook, for tests to wait on.
type Recorder struct {
	mu      sync.Mutex
	events  []supervisor.Event
	changed chan struct{}
}

// NewRecorder returns an empty recorder.
func NewRecorder() *Recorder { return &Recorder{changed: make(chan struct{})} }

// Hook records e. Pass it as the event hook.
func (r *Recorder) Hook(e supervisor.Event) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.events = append(r.events, e)
	close(r.changed)
	r.changed = make(chan struct{})
}

// Events returns a copy of the events so far.
func (r *Recorder) Events() []supervisor.Event {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]supervisor.Event(nil), r.events...)
}

// All returns the recorded events of type T.
func All[T supervisor.Event](r *Recorder) []T {
	var out []T
	for _, e := range r.Events() {
		if v, ok := e.(T); ok {
			out = append(out, v)
		}
	}
	return out
}

// WaitFor waits up to timeout for an event of type T, recorded from index
// from on, that satisfies match (nil: any), and returns it with its index.
// It fails the test on timeout.
func WaitFor[T supervisor.Event](t testing.TB, r *Recorder, from int, timeout time.Duration, match func(T) bool) (T, int) {
	t.Helper()
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	for {
		r.mu.Lock()
		events, changed := r.events, r.changed
		r.mu.Unlock()
		for i := from; i < len(events); i++ {
			if v, ok := events[i].(T); ok && (match == nil || match(v)) {
				return v, i
			}
		}
		select {
		case <-changed:
		case <-deadline.C:
			var zero T
			t.Fatalf("natstest: no %T event within %v; events: %v", zero, timeout, kinds(events))
			return zero, -1
		}
	}
}

// Len is the number of events recorded so far.
func (r *Recorder) Len() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.events)
}

func kinds(events []supervisor.Event) []string {
	out := make([]string, len(events))
	for i, e := range events {
		out[i] = e.Kind()
	}
	return out
}
