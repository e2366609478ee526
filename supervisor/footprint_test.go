package supervisor_test

import (
	"context"
	"runtime"
	"testing"

	"github.com/corral-go/corral/supervisor"
)

// A serving tree costs its Serve's goroutine and, per child, the child's
// supervisor and the child itself; a tree of one child runs that child's
// supervisor on Serve's goroutine. Not parallel: it counts the process's
// goroutines.
func TestTreeGoroutines(t *testing.T) {
	for _, tt := range []struct {
		children, want int
	}{
		{children: 1, want: 2}, // Serve (the child's supervisor) and the child
		{children: 3, want: 1 + 1 + 3*2},
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
		stop := serve(t, tree)
		for range tt.children {
			<-started
		}
		got := runtime.NumGoroutine() - before
		_ = stop()
		if got != tt.want {
			t.Errorf("%d children: %d goroutines, want %d", tt.children, got, tt.want)
		}
	}
}
