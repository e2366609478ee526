package consumer

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/corral-go/corral/internal/natstest"
)

// Callers flushing at once share round trips, and each returns only once
// the server has what it wrote before the call: its subscription matches.
func TestFlusherCoalescesAndKeepsOrder(t *testing.T) {
	t.Parallel()
	srv := natstest.RunServer(t)
	nc := connectInternal(t, srv.URL())
	acc := srv.Raw().GlobalAccount()
	var f flusher
	const callers = 200
	errs := make(chan error, callers)
	var wg sync.WaitGroup
	for i := range callers {
		wg.Go(func() {
			subject := fmt.Sprintf("flush.%d", i)
			if _, err := nc.Subscribe(subject, func(*nats.Msg) {}); err != nil {
				errs <- err
				return
			}
			if err := f.flush(nc, 5*time.Second); err != nil {
				errs <- err
				return
			}
			if !acc.SubscriptionInterest(subject) {
				errs <- fmt.Errorf("%s: flushed, but the server has no subscription", subject)
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if f.rounds > callers/2 {
		t.Errorf("%d callers took %d round trips: few shared", callers, f.rounds)
	}
	t.Logf("%d callers, %d round trips", callers, f.rounds)
}

// A caller on a new connection does not wait for rounds of the one it
// replaced, running or gathering.
func TestFlusherDoesNotMixConnections(t *testing.T) {
	t.Parallel()
	srv := natstest.RunServer(t)
	old, nc := connectInternal(t, srv.URL()), connectInternal(t, srv.URL())
	never := func() *flushRound { return &flushRound{nc: old, done: make(chan struct{})} }
	for name, f := range map[string]*flusher{
		"running":   {running: never()},
		"gathering": {running: never(), next: never()},
	} {
		done := make(chan error, 1)
		go func() { done <- f.flush(nc, 5*time.Second) }()
		select {
		case err := <-done:
			if err != nil {
				t.Fatalf("%s: %v", name, err)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("%s: a flush on a new connection waited for the old connection's round", name)
		}
	}
}
