package afterfunc_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/corral-go/corral/internal/afterfunc"
)

func TestStopWaitsForARunningFunc(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	started, release := make(chan struct{}), make(chan struct{})
	var finished atomic.Bool
	stop := afterfunc.Run(ctx, func() {
		close(started)
		<-release
		finished.Store(true)
	})
	cancel()
	<-started
	stopped := make(chan struct{})
	go func() {
		stop()
		close(stopped)
	}()
	select {
	case <-stopped:
		t.Fatal("stop returned while the func was running")
	case <-time.After(50 * time.Millisecond): // stop is expected to block
	}
	close(release)
	<-stopped
	if !finished.Load() {
		t.Fatal("stop returned before the func finished")
	}
	stop() // a second call returns at once
}

func TestStopBeforeTheContextEndsPreventsTheFunc(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	var ran atomic.Bool
	stop := afterfunc.Run(ctx, func() { ran.Store(true) })
	stop()
	cancel()
	stop()
	if ran.Load() {
		t.Fatal("the func ran after stop")
	}
}
