package supervisor_test

import (
	"context"
	"runtime"
	"testing"

	"github.com/corral-go/corral/supervisor"
)

// A serving tree costs its Serve's goroutine, which runs the root, and a
// goroutine per child, which runs the child's restart loop and its
// service; no child has a supervisor of its own. ServeInline runs a
// tree's only child on the caller's goroutine. Not parallel: it counts
// the process's goroutines.
func TestTreeGoroutines(t *testing.T) {
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
		before := runtime.NumGoroutine()
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
