package supervisor_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/corral-go/corral/supervisor"
)

// worker fails on its first run and serves on its second.
type worker struct {
	runs chan int
	n    int
}

func (w *worker) String() string { return "worker" }

func (w *worker) Serve(ctx context.Context) error {
	w.n++
	w.runs <- w.n
	if w.n == 1 {
		return errors.New("first run fails")
	}
	<-ctx.Done()
	return ctx.Err()
}

// A Tree restarts a child that fails, after the restart delay of its
// policy; when its context ends it stops the children in reverse order.
func ExampleTree() {
	noJitter := 0.0
	tree := supervisor.NewTree("app", supervisor.Events{})
	w := &worker{runs: make(chan int, 2)}
	if err := tree.Add("worker", w, supervisor.Policy{RestartDelay: time.Millisecond, Jitter: &noJitter}); err != nil {
		fmt.Println(err)
		return
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- tree.Serve(ctx) }()

	fmt.Println("run", <-w.runs)
	fmt.Println("run", <-w.runs)
	cancel()
	fmt.Println("Serve:", <-done)
	st := tree.Status()[0]
	fmt.Println(st.Name, st.State, "restarts:", st.Restarts, "last error:", st.LastError)
	// Output:
	// run 1
	// run 2
	// Serve: context canceled
	// worker stopped restarts: 1 last error: first run fails
}

// A policy reads from YAML as a mapping or a bare mode; zero fields are
// inherited from a parent policy, then from Defaults.
func ExamplePolicy_Inherit() {
	parent := supervisor.Policy{Mode: supervisor.Transient, Backoff: 30 * time.Second}
	p := supervisor.Policy{ShutdownTimeout: 20 * time.Second}.Inherit(parent).Inherit(supervisor.Defaults())
	fmt.Println(p)
	// Output:
	// transient threshold=5 decay=30s delay=100ms backoff=30s jitter=0.5 shutdown=20s
}
