// Package redeclare keeps what was declared on a connection (a KV bucket,
// an object store), declares it at most once at a time, and holds back
// declaring a stream found missing until nats-server has finished
// deleting it.
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
	mu     sync.Mutex
	nc     *nats.Conn
	val    T
	ok     bool
	gate   time.Time     // not declared before
	lost   bool          // what was declared was found missing since
	flight chan struct{} // closed when the declaration under way ends
}

// Get returns what is declared on nc, declaring it with declare when
// nothing is. declare's again says that what it declared before was found
// missing since (see Missing): the declaration re-creates it.
func (d *Declared[T]) Get(ctx context.Context, nc *nats.Conn, declare func(ctx context.Context, again bool) (T, error)) (T, error) {
	var zero T
	for {
		d.mu.Lock()
		if d.ok && d.nc == nc {
			v := d.val
			d.mu.Unlock()
			return v, nil
		}
		if f := d.flight; f != nil {
			d.mu.Unlock()
			select {
			case <-f:
				continue
			case <-ctx.Done():
				return zero, fmt.Errorf("waiting for its declaration: %w", ctx.Err())
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
				return zero, fmt.Errorf("waiting to declare it again after it was deleted: %w", ctx.Err())
			}
		}
		f := make(chan struct{})
		d.flight = f
		again := d.lost
		d.mu.Unlock()
		v, err := declare(ctx, again)
		d.mu.Lock()
		d.flight = nil
		close(f)
		if err == nil {
			d.nc, d.val, d.ok, d.lost = nc, v, true, false
		}
		d.mu.Unlock()
		return v, err
	}
}

// Missing reports that v's stream is gone: v is dropped if it is what is
// held, and the next declaration waits for After.
func (d *Declared[T]) Missing(v T) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.ok && d.val == v {
		d.ok, d.lost = false, true
		d.gate = time.Now().Add(After)
	}
}
