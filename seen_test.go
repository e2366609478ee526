package corral_test

import (
	"context"
	"strings"
	"sync"
	"testing"
)

// seen is what the handlers and workers of a test saw, by kind ("orders",
// "started"): how many times each key came, and a signal at each, so that
// a test waits for what it expects rather than for a channel of a guessed
// size to fill.
type seen struct {
	mu      sync.Mutex
	counts  map[string]map[string]int
	changed chan struct{} // one waiter's wake-up
}

func newSeen() *seen {
	return &seen{counts: map[string]map[string]int{}, changed: make(chan struct{}, 1)}
}

// note counts key under kind.
func (s *seen) note(kind, key string) {
	s.mu.Lock()
	if s.counts[kind] == nil {
		s.counts[kind] = map[string]int{}
	}
	s.counts[kind][key]++
	s.mu.Unlock()
	select {
	case s.changed <- struct{}{}:
	default:
	}
}

// count is how many times key came under kind.
func (s *seen) count(kind, key string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.counts[kind][key]
}

// withPrefix lists the keys of kind that begin with prefix.
func (s *seen) withPrefix(kind, prefix string) []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []string
	for k := range s.counts[kind] {
		if strings.HasPrefix(k, prefix) {
			out = append(out, k)
		}
	}
	return out
}

// waitFor waits until every one of keys came under kind, or fails the
// test when ctx ends. One goroutine waits at a time.
func (s *seen) waitFor(t *testing.T, ctx context.Context, what, kind string, keys []string) {
	t.Helper()
	for {
		missing := 0
		for _, k := range keys {
			if s.count(kind, k) == 0 {
				missing++
			}
		}
		if missing == 0 {
			return
		}
		select {
		case <-s.changed:
		case <-ctx.Done():
			t.Fatalf("%d of %d %s never seen", missing, len(keys), what)
		}
	}
}
