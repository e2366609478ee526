package tasks

import (
	"context"
	"errors"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/corral-go/corral/internal/backoff"
)

// unheard counts the requests in a row to a consumer just created that
// found no responder. A consumer created on another cluster's servers
// (its stream across a gateway or a leaf link) is not heard of on this
// one's at once, so such a request is asked again shortly, up to
// maxUnheard times in a row.
type unheard int

// maxUnheard bounds the requests in a row that may find no responder
// before the caller fails.
const maxUnheard = 8

// again reports whether err is a no-responders that may be the consumer's
// newness, having waited (50ms, doubling to 1s) before the caller asks
// again; false for any other error, once maxUnheard are used up, or when
// ctx ends while it waits.
func (u *unheard) again(ctx context.Context, err error) bool {
	if !errors.Is(err, nats.ErrNoResponders) || *u >= maxUnheard {
		return false
	}
	if backoff.Wait(ctx, backoff.Doubling(50*time.Millisecond, time.Second, int(*u))) != nil {
		return false
	}
	*u++
	return true
}

// heard resets the count: the consumer answered.
func (u *unheard) heard() { *u = 0 }
