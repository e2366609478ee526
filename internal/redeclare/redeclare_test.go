package redeclare_test

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/corral-go/corral/internal/redeclare"
)

// Callers at once share one declaration.
func TestOneDeclarationAtATime(t *testing.T) {
	var d redeclare.Declared[int]
	nc := &nats.Conn{}
	var calls atomic.Int32
	release := make(chan struct{})
	declare := func(context.Context, bool) (int, error) {
		calls.Add(1)
		<-release
		return 7, nil
	}
	var wg sync.WaitGroup
	for range 10 {
		wg.Go(func() {
			if v, err := d.Get(context.Background(), nc, declare); v != 7 || err != nil {
				t.Errorf("got %d, %v", v, err)
			}
		})
	}
	close(release)
	wg.Wait()
	if n := calls.Load(); n != 1 {
		t.Fatalf("declared %d times, want once", n)
	}
}

// A caller waiting for another's declaration stops at its own ctx.
func TestWaitersKeepTheirOwnDeadline(t *testing.T) {
	var d redeclare.Declared[int]
	nc := &nats.Conn{}
	started, release := make(chan struct{}), make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		_, _ = d.Get(context.Background(), nc, func(context.Context, bool) (int, error) {
			close(started)
			<-release
			return 1, nil
		})
	}()
	<-started
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := d.Get(ctx, nc, func(context.Context, bool) (int, error) {
		t.Error("declared while another declaration was under way")
		return 0, nil
	}); !errors.Is(err, context.Canceled) {
		t.Fatalf("got %v, want the waiter's context.Canceled", err)
	}
	close(release)
	<-done
}

// A failed declaration is not kept; the next call declares again.
func TestFailedDeclarationIsNotKept(t *testing.T) {
	var d redeclare.Declared[int]
	nc := &nats.Conn{}
	boom := errors.New("boom")
	if _, err := d.Get(context.Background(), nc, func(context.Context, bool) (int, error) { return 0, boom }); !errors.Is(err, boom) {
		t.Fatalf("got %v", err)
	}
	if v, err := d.Get(context.Background(), nc, func(context.Context, bool) (int, error) { return 2, nil }); v != 2 || err != nil {
		t.Fatalf("got %d, %v", v, err)
	}
}

// Once found missing, a value is declared again only After later; a stale
// value's report drops nothing; a new connection declares anew.
func TestMissingHoldsBackTheNextDeclaration(t *testing.T) {
	var d redeclare.Declared[int]
	nc := &nats.Conn{}
	ctx := context.Background()
	v, _ := d.Get(ctx, nc, func(context.Context, bool) (int, error) { return 1, nil })
	d.Missing(99) // not what is held
	if got, _ := d.Get(ctx, nc, func(context.Context, bool) (int, error) { return 2, nil }); got != v {
		t.Fatalf("a stale report dropped the value: got %d", got)
	}
	d.Missing(v)
	missing := time.Now()
	short, cancel := context.WithTimeout(ctx, redeclare.After/10)
	defer cancel()
	if _, err := d.Get(short, nc, func(context.Context, bool) (int, error) {
		t.Error("declared again at once")
		return 0, nil
	}); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("got %v, want to wait past the deadline", err)
	}
	var again bool
	if got, err := d.Get(ctx, nc, func(_ context.Context, a bool) (int, error) { again = a; return 3, nil }); got != 3 || err != nil || !again {
		t.Fatalf("got %d, %v, again %v; want 3 declared again", got, err, again)
	}
	if since := time.Since(missing); since < redeclare.After {
		t.Fatalf("declared again %v after it went missing, want at least %v", since, redeclare.After)
	}
	if got, _ := d.Get(ctx, &nats.Conn{}, func(_ context.Context, a bool) (int, error) { again = a; return 4, nil }); got != 4 || again {
		t.Fatalf("a new connection got %d (again %v), want a new first declaration", got, again)
	}
}
