package supervisor_test

import (
	"context"
	"fmt"
	"runtime"
	"testing"
	"time"

	"github.com/corral-go/corral/internal/natstest"
	"github.com/corral-go/corral/supervisor"
)

// A serving tree costs its Serve's goroutine, which runs the root, and a
// goroutine per child, which runs the child's restart loop and its
// service; no child has a supervisor of its own. ServeInline runs a
// tree's only child on the caller's goroutine. Not parallel: it counts
// the process's goroutines.
func TestTreeGoroutines(t *testing.T) {
	// What a tree stopped leaves behind exits shortly after (suture's own
	// goroutines that cancel a child), as may an earlier test's: each case
	// starts from the lowest count seen.
	base := runtime.NumGoroutine()
	for _, tt := range []struct {
		name     string
		children int
		inline   bool
		want     int
	}{
		{name: "one child", children: 1, want: 2},
		{name: "three children", children: 3, want: 1 + 3},
		{name: "inline", children: 1, inline: true, want: 1},
	} {
		tree := supervisor.NewTree("footprint", supervisor.Events{})
		started := make(chan struct{}, tt.children)
		for i := range tt.children {
			child := &fn{name: string(rune('a' + i)), serve: func(ctx context.Context, _ int) error {
				started <- struct{}{}
				<-ctx.Done()
				return ctx.Err()
			}}
			if err := tree.Add(child.name, child, supervisor.Policy{}); err != nil {
				t.Fatal(err)
			}
		}
		natstest.Eventually(t, 10*time.Second, func() bool {
			n := runtime.NumGoroutine()
			base = min(base, n) // an earlier test's leftover exited
			return n == base
		},
			func() string {
				return fmt.Sprintf("%d goroutines, want %d as at the start", runtime.NumGoroutine(), base)
			})
		before := base
		var stop func() error
		if tt.inline {
			stop = serveInline(t, tree)
		} else {
			stop = serve(t, tree)
		}
		for range tt.children {
			<-started
		}
		got := runtime.NumGoroutine() - before
		_ = stop()
		if got != tt.want {
			t.Errorf("%s: %d goroutines, want %d", tt.name, got, tt.want)
		}
	}
}
