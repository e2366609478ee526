package jsapi

import (
	"context"
	"errors"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/corral-go/corral/internal/backoff"
)

// Try bounds: the first try of a request waits tryFirst for its answer,
// each next one twice as long, up to tryMax; after an answer that says
// the cluster is not available yet the next try waits pauseMin, doubling
// up to pauseMax.
const (
	tryFirst = time.Second
	tryMax   = 4 * time.Second
	pauseMin = 100 * time.Millisecond
	pauseMax = time.Second
)

// Ask makes a JetStream API request that is safe to repeat (a lookup, the
// declaration of a stream, a bucket or a durable consumer), asking again
// until it gets an answer or ctx ends (Timeout when ctx has no deadline). A clustered nats-server leaves
// some requests unanswered while it creates, elects or moves what they
// are about: a stream or consumer whose leader is not elected yet answers
// no lookup, and of concurrent declarations of one consumer only the
// first is answered. Each try therefore waits a short time (1s, doubling
// up to 4s) rather than all of ctx, and an answer that the cluster is
// not available yet is asked again after a pause. Any other answer,
// error or not, is returned as is; when ctx ends first, the last try's
// error is.
func Ask[T any](ctx context.Context, req func(ctx context.Context) (T, error)) (T, error) {
	return askUntil(ctx, req, func(error) bool { return false })
}

// AskDeclared is Ask for a lookup of a stream just declared: a replica
// still creating it answers that it does not exist, so that answer is
// asked again too, for up to a second.
func AskDeclared[T any](ctx context.Context, req func(ctx context.Context) (T, error)) (T, error) {
	giveUp := time.Now().Add(declaredLag)
	return askUntil(ctx, req, func(err error) bool {
		return errors.Is(err, jetstream.ErrStreamNotFound) && time.Now().Before(giveUp)
	})
}

// declaredLag bounds how long after its declaration a stream may be
// reported missing by a replica that is still creating it.
const declaredLag = time.Second

// askUntil is Ask that also asks again after an answer again says to.
func askUntil[T any](ctx context.Context, req func(ctx context.Context) (T, error), again func(error) bool) (T, error) {
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, Timeout)
		defer cancel()
	}
	for n := 0; ; n++ {
		tctx, cancel := context.WithTimeout(ctx, backoff.Doubling(tryFirst, tryMax, n))
		v, err := req(tctx)
		unanswered := tctx.Err() != nil && errors.Is(err, context.DeadlineExceeded)
		cancel()
		var pause time.Duration
		switch {
		case err == nil || ctx.Err() != nil:
			return v, err
		case unanswered:
		case NotAvailable(err) || again(err):
			pause = backoff.Doubling(pauseMin, pauseMax, n)
		default:
			return v, err
		}
		if backoff.Wait(ctx, pause) != nil {
			return v, err
		}
	}
}

// NotAvailable reports whether err is a cluster's answer that it cannot
// serve the request for now: CodeClusterNotAvailable, CodeStreamOffline
// or CodeConsumerOffline.
func NotAvailable(err error) bool {
	code, _ := Code(err)
	return code == CodeClusterNotAvailable || code == CodeStreamOffline || code == CodeConsumerOffline
}
