// Package redeclare keeps what was declared on a connection (a KV bucket,
// an object store), declares it at most once at a time, holds back
// declaring a stream found missing until nats-server has finished
// deleting it, and tells a stream created anew from the one declared
// before.
//
// nats-server removes a deleted stream from its account, tells its
// consumers, and only then removes its files: a stream of the same name
// declared in between takes up the files being removed (it stops storing,
// or keeps messages of the deleted one).
package redeclare

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
)

// After is how long after a stream was found missing it may be declared
// again.
const After = time.Second

// Declared holds what was declared on a connection. Its zero value holds
// nothing. Callers waiting for a declaration, their own or another's,
// wait on their own ctx; a declaration runs with no lock held.
type Declared[T comparable] struct {
	mu      sync.Mutex
	nc      *nats.Conn
	val     T
	ok      bool
	created time.Time     // when the stream last declared was created
	gate    time.Time     // not declared before
	flight  chan struct{} // closed when the declaration under way ends
}

// Get returns what is declared on nc, declaring it with declare when
// nothing is. declare returns what it declared and when its stream was
// created. recreated reports, to the caller whose declaration found it,
// a stream created since the one declared before: deleted and declared
// again, or a memory stream lost in a restart. A stream only reported
// missing (see Missing), which a replica still creating it does, is not
// one.
func (d *Declared[T]) Get(ctx context.Context, nc *nats.Conn, declare func(ctx context.Context) (T, time.Time, error)) (v T, recreated bool, err error) {
	var zero T
	for {
		d.mu.Lock()
		if d.ok && d.nc == nc {
			v := d.val
			d.mu.Unlock()
			return v, false, nil
		}
		if f := d.flight; f != nil {
			d.mu.Unlock()
			select {
			case <-f:
				continue
			case <-ctx.Done():
				return zero, false, fmt.Errorf("waiting for its declaration: %w", ctx.Err())
			}
		}
		if wait := time.Until(d.gate); wait > 0 {
			d.mu.Unlock()
			t := time.NewTimer(wait)
			select {
			case <-t.C:
				continue // and check again: it may have gone missing again
			case <-ctx.Done():
				t.Stop()
				return zero, false, fmt.Errorf("waiting to declare it again after it was deleted: %w", ctx.Err())
			}
		}
		f := make(chan struct{})
		d.flight = f
		d.mu.Unlock()
		v, created, err := declare(ctx)
		d.mu.Lock()
		d.flight = nil
		close(f)
		if err == nil {
			recreated = !d.created.IsZero() && !created.Equal(d.created)
			d.nc, d.val, d.ok, d.created = nc, v, true, created
		}
		d.mu.Unlock()
		return v, recreated, err
	}
}

// Missing reports that v's stream was found missing: v is dropped if it
// is what is held, and the next declaration waits for After.
func (d *Declared[T]) Missing(v T) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.ok && d.val == v {
		d.ok = false
		d.gate = time.Now().Add(After)
	}
}
