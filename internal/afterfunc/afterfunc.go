// Package afterfunc runs a function once a context ends, as
// context.AfterFunc does, and lets its owner wait for it, so that no
// goroutine outlives the owner.
package afterfunc

import (
	"context"
	"sync"
)

// Run arranges to call f on a goroutine of its own once ctx is done. The
// stop returned keeps f from running if it has not started and waits for
// it if it has: once stop returns, f is not running and will not run.
// stop may be called more than once.
func Run(ctx context.Context, f func()) (stop func()) {
	done := make(chan struct{})
	cancel := context.AfterFunc(ctx, func() {
		defer close(done)
		f()
	})
	return sync.OnceFunc(func() {
		if !cancel() {
			<-done
		}
	})
}
