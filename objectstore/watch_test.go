package objectstore_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/corral-go/corral/internal/natstest"
	"github.com/corral-go/corral/objectstore"
	"github.com/corral-go/corral/supervisor"
)

func TestWatchRefusesNilFunc(t *testing.T) {
	t.Parallel()
	s, _ := open(t, "nilfn")
	if _, err := s.Watch("w", objectstore.WatchConfig{}, nil); !errors.Is(err, supervisor.ErrInvalidConfig) || !strings.Contains(err.Error(), "nil") {
		t.Fatalf("nil WatchFunc: %v, want supervisor.ErrInvalidConfig", err)
	}
}

// UpdatesOnly skips the objects there before the watch; IgnoreDeletes
// skips deleted ones. Synced still comes first. The deletion is of the
// object put before the watch: deleting one put after it would roll its
// put up (the store keeps one record per object), and a watch that had
// not read it yet could never deliver it.
func TestWatchUpdatesOnlyIgnoreDeletes(t *testing.T) {
	t.Parallel()
	s, _ := open(t, "filtered")
	ctx := ctxT(t)
	if _, err := s.PutBytes(ctx, "before", []byte("1")); err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var seen []string
	w, err := s.Watch("w", objectstore.WatchConfig{UpdatesOnly: true, IgnoreDeletes: true},
		func(_ context.Context, c objectstore.Change) error {
			mu.Lock()
			defer mu.Unlock()
			if c.Synced {
				seen = append(seen, "synced")
			} else {
				seen = append(seen, fmt.Sprintf("%s deleted=%v", c.Info.Name, c.Info.Deleted))
			}
			return nil
		})
	if err != nil {
		t.Fatal(err)
	}
	natstest.Restart(t, w)
	count := func() int {
		mu.Lock()
		defer mu.Unlock()
		return len(seen)
	}
	natstest.Eventually(t, 20*time.Second, func() bool { return count() == 1 },
		func() string { return "the watch never synced" })
	if _, err := s.PutBytes(ctx, "after", []byte("2")); err != nil {
		t.Fatal(err)
	}
	if err := s.Delete(ctx, "before"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.PutBytes(ctx, "last", []byte("3")); err != nil {
		t.Fatal(err)
	}
	natstest.Eventually(t, 20*time.Second, func() bool { return count() >= 3 },
		func() string { return fmt.Sprintf("got %d changes, want 3", count()) })
	mu.Lock()
	defer mu.Unlock()
	if want := "synced,after deleted=false,last deleted=false"; strings.Join(seen, ",") != want {
		t.Fatalf("changes: %q, want %q", seen, want)
	}
}
