package natstest

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
)

// Eventually polls cond every 5ms until it holds; once timeout has passed
// it fails the test with what describe returns. It is for state that no
// event announces (a counter, the server's view); wait on the event where
// there is one.
func Eventually(t testing.TB, timeout time.Duration, cond func() bool, describe func() string) {
	t.Helper()
	EventuallyEvery(t, timeout, 5*time.Millisecond, cond, describe)
}

// EventuallyEvery is Eventually polling every every: a benchmark's wait
// for its last message, which a 5ms tick would add to what it measures.
func EventuallyEvery(t testing.TB, timeout, every time.Duration, cond func() bool, describe func() string) {
	t.Helper()
	if cond() {
		return
	}
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	tick := time.NewTicker(every)
	defer tick.Stop()
	for {
		select {
		case <-deadline.C:
			if cond() {
				return
			}
			t.Fatalf("not within %v: %s", timeout, describe())
		case <-tick.C:
			if cond() {
				return
			}
		}
	}
}

// Signal subscribes to subject on nc (flushed, so the server has the
// interest when it returns) and returns a channel that holds one signal
// while any message on it is unread; the subscription ends with the test.
// For advisories such as $JS.EVENT.ADVISORY.STREAM.CREATED.<stream>.
func Signal(t testing.TB, nc *nats.Conn, subject string) <-chan struct{} {
	t.Helper()
	ch := make(chan struct{}, 1)
	sub, err := nc.Subscribe(subject, func(*nats.Msg) {
		select {
		case ch <- struct{}{}:
		default:
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = sub.Unsubscribe() })
	if err := nc.Flush(); err != nil {
		t.Fatal(err)
	}
	return ch
}

// Restart serves svc again each time its Serve returns, as a supervisor
// would restart it, until the test ends; cleanup waits for the last Serve
// to return. The returned func reports the error Serve returned last.
func Restart(t testing.TB, svc interface{ Serve(context.Context) error }) (lastErr func() error) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	var mu sync.Mutex
	var last error
	go func() {
		defer close(done)
		for ctx.Err() == nil {
			if err := svc.Serve(ctx); err != nil {
				mu.Lock()
				last = err
				mu.Unlock()
			}
		}
	}()
	t.Cleanup(func() {
		cancel()
		<-done
	})
	return func() error {
		mu.Lock()
		defer mu.Unlock()
		return last
	}
}
