// Package redeclare holds back declaring a stream found missing until
// nats-server has finished deleting it.
//
// nats-server removes a deleted stream from its account, tells its
// consumers, and only then removes its files: a stream of the same name
// declared in between takes up the files being removed (it stops storing,
// or keeps messages of the deleted one).
package redeclare

import (
	"context"
	"time"
)

// After is how long after a stream was found missing it may be declared
// again.
const After = time.Second

// Gate is when a missing stream may be declared again. The zero Gate is
// open. Its owner guards it.
type Gate struct{ at time.Time }

// Missing records that the stream was just found missing.
func (g *Gate) Missing() { g.at = time.Now().Add(After) }

// Wait returns once the stream may be declared, or ctx's error.
func (g *Gate) Wait(ctx context.Context) error {
	d := time.Until(g.at)
	if d <= 0 {
		return nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
