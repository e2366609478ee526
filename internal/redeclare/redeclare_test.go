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
	declare := func(context.Context) (int, time.Time, error) {
		calls.Add(1)
		<-release
		return 7, time.Time{}, nil
	}
	var wg sync.WaitGroup
	for range 10 {
		wg.Go(func() {
			if v, _, err := d.Get(context.Background(), nc, declare); v != 7 || err != nil {
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
		_, _, _ = d.Get(context.Background(), nc, func(context.Context) (int, time.Time, error) {
			close(started)
			<-release
			return 1, time.Time{}, nil
		})
	}()
	<-started
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, _, err := d.Get(ctx, nc, func(context.Context) (int, time.Time, error) {
		t.Error("declared while another declaration was under way")
		return 0, time.Time{}, nil
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
	if _, _, err := d.Get(context.Background(), nc, declared(0, time.Time{}, boom)); !errors.Is(err, boom) {
		t.Fatalf("got %v", err)
	}
	if v, _, err := d.Get(context.Background(), nc, declared(2, time.Time{}, nil)); v != 2 || err != nil {
		t.Fatalf("got %d, %v", v, err)
	}
}

// declared is a declaration that returns v, created and err.
func declared(v int, created time.Time, err error) func(context.Context) (int, time.Time, error) {
	return func(context.Context) (int, time.Time, error) { return v, created, err }
}

// Once found missing, a value is declared again only After later; a stale
// value's report drops nothing; a new connection declares anew.
func TestMissingHoldsBackTheNextDeclaration(t *testing.T) {
	var d redeclare.Declared[int]
	nc := &nats.Conn{}
	ctx := context.Background()
	v, _, _ := d.Get(ctx, nc, declared(1, time.Time{}, nil))
	d.Missing(99) // not what is held
	if got, _, _ := d.Get(ctx, nc, declared(2, time.Time{}, nil)); got != v {
		t.Fatalf("a stale report dropped the value: got %d", got)
	}
	d.Missing(v)
	missing := time.Now()
	short, cancel := context.WithTimeout(ctx, redeclare.After/10)
	defer cancel()
	if _, _, err := d.Get(short, nc, func(context.Context) (int, time.Time, error) {
		t.Error("declared again at once")
		return 0, time.Time{}, nil
	}); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("got %v, want to wait past the deadline", err)
	}
	if got, _, err := d.Get(ctx, nc, declared(3, time.Time{}, nil)); got != 3 || err != nil {
		t.Fatalf("got %d, %v; want 3 declared again", got, err)
	}
	if since := time.Since(missing); since < redeclare.After {
		t.Fatalf("declared again %v after it went missing, want at least %v", since, redeclare.After)
	}
	if got, _, _ := d.Get(ctx, &nats.Conn{}, declared(4, time.Time{}, nil)); got != 4 {
		t.Fatalf("a new connection got %d, want a new declaration", got)
	}
}

// A stream is recreated when a declaration finds it created at another
// time than the one before: on a new connection or after it was found
// missing. One found missing and declared again as it was, which a
// replica still creating a stream makes happen, is not recreated.
func TestRecreatedIsANewCreationTime(t *testing.T) {
	var d redeclare.Declared[int]
	ctx := context.Background()
	first, later := time.Unix(100, 0), time.Unix(200, 0)
	nc := &nats.Conn{}
	for i, step := range []struct {
		name    string
		missing bool // else a new connection
		created time.Time
		want    bool
	}{
		{"first declaration", false, first, false},
		{"found missing, as it was", true, first, false},
		{"new connection, as it was", false, first, false},
		{"found missing, created anew", true, later, true},
		{"new connection, created anew", false, first, true},
	} {
		if step.missing {
			d.Missing(i - 1) // the value the step before declared
		} else {
			nc = &nats.Conn{}
		}
		v, recreated, err := d.Get(ctx, nc, declared(i, step.created, nil))
		if v != i || err != nil || recreated != step.want {
			t.Fatalf("%s: got %d, recreated %v, %v; want %d, recreated %v", step.name, v, recreated, err, i, step.want)
		}
	}
}
