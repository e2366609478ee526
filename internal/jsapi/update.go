package jsapi

import (
	"context"
	"errors"

	"github.com/nats-io/nats.go/jetstream"
)

// UpdateRefused reports whether err, from declaring a stream or a
// consumer, is the server refusing to change it in place: existed says
// the stream or consumer was there before, so that the declaration was an
// update, and err carries one of the codes the server refuses an update
// with. The codes are no sign alone (10052 is also a bad name, 10012 any
// failure to create a consumer); matching the description's words missed
// refusals such as "message TTL status can not be disabled". A refusal
// not about the change, such as overlapping subjects (10065), is not one.
func UpdateRefused(err error, existed bool) bool {
	if !existed {
		return false
	}
	switch code, _ := Code(err); code {
	case CodeStreamInvalidConfig, CodeStreamUpdate, CodeStreamMirrorNotUpdatable,
		CodeStreamReplicasNotUpdatable, CodeConsumerCreate:
		return true
	}
	return false
}

// DeclareStream creates the stream cfg describes, or updates the one of
// its name when the server says it differs; existed reports that it did.
// Creating first matters: the server answers a stream that already
// matches without touching it, where an update on every start rewrites
// its configuration (and publishes an advisory) while consumers are being
// created on it, which nats-server 2.15.3's file store races on. Both are
// asked until answered (see Ask): a cluster answers one of several
// processes declaring a new stream at once, and the others not at all.
func DeclareStream(ctx context.Context, js jetstream.JetStream, cfg jetstream.StreamConfig) (s jetstream.Stream, existed bool, err error) {
	s, err = Ask(ctx, func(ctx context.Context) (jetstream.Stream, error) { return js.CreateStream(ctx, cfg) })
	if errors.Is(err, jetstream.ErrStreamNameAlreadyInUse) {
		s, err = Ask(ctx, func(ctx context.Context) (jetstream.Stream, error) { return js.UpdateStream(ctx, cfg) })
		return s, true, err
	}
	return s, false, err
}
