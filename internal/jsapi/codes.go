package jsapi

import (
	"errors"
	"strings"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// Error codes of the JetStream API that nats.go does not name, with the
// name nats-server gives each (its errors.json). Every package of
// Corral's that acts on a code names it here, and tests an error against
// it with the functions below.
const (
	// CodeResourcesExceeded means the account's JetStream resources are
	// exhausted (JSAccountResourcesExceededErr); it clears only when
	// something else frees room.
	CodeResourcesExceeded jetstream.ErrorCode = 10002
	// CodeClusterNotAvailable (JSClusterNotAvailErr, "JetStream system
	// temporarily unavailable") is a cluster's answer while it has no
	// leader for the request: asked again later, it answers.
	CodeClusterNotAvailable jetstream.ErrorCode = 10008
	// CodeStreamOffline and CodeConsumerOffline (JSStreamOfflineErr,
	// JSConsumerOfflineErr: "stream is offline", "consumer is offline")
	// are a cluster's answer while the peers of a stream or consumer are
	// lost or its leader is not among them, as while a node is lost: asked
	// again later, it answers. The variants with a reason (10194, 10195)
	// say that the server cannot run it at all.
	CodeStreamOffline   jetstream.ErrorCode = 10118
	CodeConsumerOffline jetstream.ErrorCode = 10119
	// CodeConsumerCreate (JSConsumerCreateErrF) is what the server's
	// addConsumerWithAction returns when updateConfig (server/consumer.go)
	// refuses to change an existing consumer: "deliver policy can not be
	// updated", "can not update pull consumer to push based" and their
	// kind. It is also any plain failure of a declaration ("error creating
	// store for consumer"), so again a refusal only for one that existed.
	CodeConsumerCreate jetstream.ErrorCode = 10012
	// CodeInsufficientResources means the server's JetStream storage is
	// exhausted (JSInsufficientResourcesErr).
	CodeInsufficientResources jetstream.ErrorCode = 10023
	// CodeMemoryResourcesExceeded and CodeStorageResourcesExceeded mean the
	// server has no memory or storage left for JetStream
	// (JSMemoryResourcesExceededErr, JSStorageResourcesExceededErr).
	CodeMemoryResourcesExceeded  jetstream.ErrorCode = 10028
	CodeStorageResourcesExceeded jetstream.ErrorCode = 10047
	// CodeStreamInvalidConfig (JSStreamInvalidConfigF) is what
	// configUpdateCheck in server/stream.go returns for every change it
	// refuses: "stream configuration update can not change storage type",
	// "message TTL status can not be disabled", "message schedules can not
	// be disabled" and their kind. The server gives it as well to a
	// configuration invalid in itself, checked before it looks the stream
	// up ("stream name is required"), so it is a refusal to change only
	// for a stream that existed.
	CodeStreamInvalidConfig jetstream.ErrorCode = 10052
	// CodeStreamMirrorNotUpdatable (JSStreamMirrorNotUpdatableErr) is a
	// change of a mirror's source.
	CodeStreamMirrorNotUpdatable jetstream.ErrorCode = 10055
	// CodeMsgDeleteFailed means a message could not be deleted, as when it
	// is gone already (JSStreamMsgDeleteFailedF).
	CodeMsgDeleteFailed jetstream.ErrorCode = 10057
	// CodeStreamMismatch means the expected stream does not match
	// (JSStreamMismatchErr).
	CodeStreamMismatch jetstream.ErrorCode = 10060
	// CodeStreamReplicasNotUpdatable (JSStreamReplicasNotUpdatableErr) is
	// a change of replicas refused by older servers.
	CodeStreamReplicasNotUpdatable jetstream.ErrorCode = 10061
	// CodeStreamUpdate (JSStreamUpdateErrF) is an update of an existing
	// stream refused for another reason: "change to limits violates
	// consumers".
	CodeStreamUpdate jetstream.ErrorCode = 10069
	// CodeWrongLastMsgID means the expected last Msg-Id does not match
	// (JSStreamWrongLastMsgIDErrF).
	CodeWrongLastMsgID jetstream.ErrorCode = 10070
	// CodeStreamReplicasNotSupported means a stream asks for replicas a
	// server that is not clustered cannot place
	// (JSStreamReplicasNotSupportedErr).
	CodeStreamReplicasNotSupported jetstream.ErrorCode = 10074
	// CodeStoreFailed means the stream could not store the message
	// (JSStreamStoreFailedF); the description is the store's reason:
	// "maximum messages exceeded", "maximum bytes exceeded", "maximum
	// messages per subject exceeded" (a full stream with discard new),
	// "message too large" or "store is closed".
	CodeStoreFailed jetstream.ErrorCode = 10077
	// CodeHeaderExceedsMaximum means a message's headers are over the
	// 65535 bytes a stream stores (JSStreamHeaderExceedsMaximumErr).
	CodeHeaderExceedsMaximum jetstream.ErrorCode = 10097
	// CodeMaxAckPendingExcess means a consumer's max_ack_pending is above
	// a limit of the stream's, the account's or the server's
	// (JSConsumerMaxPendingAckExcessErrF).
	CodeMaxAckPendingExcess jetstream.ErrorCode = 10121
)

// Code returns the JetStream API error code err carries, if any.
func Code(err error) (jetstream.ErrorCode, bool) {
	var apiErr *jetstream.APIError
	if !errors.As(err, &apiErr) {
		return 0, false
	}
	return apiErr.ErrorCode, true
}

// WrongLastSequence reports whether err is the server refusing a write
// that expected another last sequence: code 10071, or 10164 from a
// replicated (R>1) stream.
func WrongLastSequence(err error) bool {
	code, ok := Code(err)
	return ok && (code == jetstream.JSErrCodeStreamWrongLastSequence ||
		code == jetstream.JSErrCodeStreamWrongLastSequenceConstant)
}

// TooLarge reports whether err is a message refused for its size, which
// sending it again cannot mend: by nats.go before it was sent (over the
// server's max payload), or by the stream (over its max_msg_size, headers
// over 65535 bytes, or its store's "message too large").
func TooLarge(err error) bool {
	if errors.Is(err, nats.ErrMaxPayload) {
		return true
	}
	var apiErr *jetstream.APIError
	if !errors.As(err, &apiErr) {
		return false
	}
	switch apiErr.ErrorCode {
	case jetstream.JSErrCodeStreamMessageExceedsMaximum, CodeHeaderExceedsMaximum:
		return true
	case CodeStoreFailed:
		return storeTooLarge(apiErr)
	}
	return false
}

// storeTooLarge reports whether a failed store (CodeStoreFailed) was
// refused for the message's size.
func storeTooLarge(apiErr *jetstream.APIError) bool {
	return strings.Contains(strings.ToLower(apiErr.Description), "too large")
}

// ExpectationFailed reports whether err is the server refusing a publish
// whose expected last sequence (of the stream or of its subject) or last
// Msg-Id did not match. A re-send of a message the stream stored already
// fails so as well: the server checks expectations before Msg-Id
// duplicates.
func ExpectationFailed(err error) bool {
	code, _ := Code(err)
	return WrongLastSequence(err) || code == CodeWrongLastMsgID
}

// DeclareRefused reports whether err is the server's refusal of a
// stream's declaration, which declaring again will not change: a
// *jetstream.APIError with a 4xx code (subjects overlapping another
// stream's, a permission), or one of the refusals of a configuration the
// server reports with 500 (invalid, not changeable in place, replicas it
// cannot place). Its 503s (JetStream not enabled, not available yet,
// insufficient resources) and 500s of a cluster without a leader pass.
func DeclareRefused(err error) bool {
	var apiErr *jetstream.APIError
	if !errors.As(err, &apiErr) {
		return false
	}
	switch apiErr.ErrorCode {
	case CodeStreamInvalidConfig, CodeStreamUpdate, CodeStreamReplicasNotSupported:
		return true
	}
	return apiErr.Code >= 400 && apiErr.Code < 500
}

// Refusal is what the server's answer to a publish says of sending the
// message again.
type Refusal int

const (
	// Passing means sending again may succeed: a store closed while its
	// stream restarts, JetStream or the cluster unavailable for now.
	Passing Refusal = iota
	// Final means sending again cannot mend it: a failed expectation, a
	// message larger than the stream takes, no such stream, JetStream not
	// enabled for the account, another stream than expected, or any other
	// bad request (a 400 answer with an error code).
	Final
	// Full means the stream (at a limit, with discard new), the account or
	// the server has no room: room comes back only when consumers, limits
	// or an operator free it, on no schedule a retry could follow.
	Full
)

// PublishRefusal returns what err, the server's answer to a publish,
// says of sending the message again; ok is false when err is no
// *jetstream.APIError.
func PublishRefusal(err error) (r Refusal, ok bool) {
	var apiErr *jetstream.APIError
	if !errors.As(err, &apiErr) {
		return Passing, false
	}
	switch apiErr.ErrorCode {
	case jetstream.JSErrCodeStreamWrongLastSequence, jetstream.JSErrCodeStreamWrongLastSequenceConstant,
		jetstream.JSErrCodeStreamMessageExceedsMaximum, jetstream.JSErrCodeStreamNotFound,
		jetstream.JSErrCodeJetStreamNotEnabledForAccount,
		CodeWrongLastMsgID, CodeStreamMismatch:
		return Final, true
	case CodeResourcesExceeded, CodeInsufficientResources,
		CodeMemoryResourcesExceeded, CodeStorageResourcesExceeded:
		return Full, true
	case CodeStoreFailed:
		switch {
		case strings.Contains(strings.ToLower(apiErr.Description), "maximum"): // messages, bytes, messages per subject
			return Full, true
		case storeTooLarge(apiErr):
			return Final, true
		}
		return Passing, true // "store is closed": the stream is restarting
	}
	if apiErr.Code == 400 && apiErr.ErrorCode != 0 {
		return Final, true
	}
	return Passing, true
}
