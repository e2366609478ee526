package jsapi_test

import (
	"errors"
	"fmt"
	"testing"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/corral-go/corral/internal/jsapi"
)

// A publish's refusal is final, for lack of room, or passing, by its
// code, and for a failed store by the store's reason.
func TestPublishRefusal(t *testing.T) {
	t.Parallel()
	api := func(code int, errCode jetstream.ErrorCode, desc string) error {
		return fmt.Errorf("publish: %w", &jetstream.APIError{Code: code, ErrorCode: errCode, Description: desc})
	}
	for _, tc := range []struct {
		name  string
		err   error
		want  jsapi.Refusal
		isAPI bool
	}{
		{"wrong last sequence", api(400, jetstream.JSErrCodeStreamWrongLastSequence, ""), jsapi.Final, true},
		{"wrong last Msg-Id", api(400, jsapi.CodeWrongLastMsgID, ""), jsapi.Final, true},
		{"stream mismatch", api(400, jsapi.CodeStreamMismatch, ""), jsapi.Final, true},
		{"account out of room", api(400, jsapi.CodeResourcesExceeded, ""), jsapi.Full, true},
		{"server out of storage", api(503, jsapi.CodeInsufficientResources, ""), jsapi.Full, true},
		{"stream at its limit", api(503, jsapi.CodeStoreFailed, "Maximum messages exceeded"), jsapi.Full, true},
		{"message too large", api(503, jsapi.CodeStoreFailed, "message too large"), jsapi.Final, true},
		{"store closed", api(400, jsapi.CodeStoreFailed, "store is closed"), jsapi.Passing, true},
		{"other bad request", api(400, 10999, ""), jsapi.Final, true},
		{"no leader", api(503, 10008, ""), jsapi.Passing, true},
		{"no error code", api(400, 0, ""), jsapi.Passing, true},
		{"no API error", fmt.Errorf("publish: %w", nats.ErrTimeout), jsapi.Passing, false},
	} {
		if got, isAPI := jsapi.PublishRefusal(tc.err); got != tc.want || isAPI != tc.isAPI {
			t.Errorf("%s: %v, %v, want %v, %v", tc.name, got, isAPI, tc.want, tc.isAPI)
		}
	}
}

// A failed expectation is a wrong last sequence, of the stream or its
// subject, or a wrong last Msg-Id; nothing else.
func TestExpectationFailed(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		err  error
		want bool
	}{
		{&jetstream.APIError{ErrorCode: jetstream.JSErrCodeStreamWrongLastSequence}, true},
		{&jetstream.APIError{ErrorCode: jetstream.JSErrCodeStreamWrongLastSequenceConstant}, true},
		{fmt.Errorf("publish: %w", &jetstream.APIError{ErrorCode: jsapi.CodeWrongLastMsgID}), true},
		{&jetstream.APIError{ErrorCode: jsapi.CodeStreamMismatch}, false},
		{errors.New("wrong last sequence"), false},
		{nil, false},
	} {
		if got := jsapi.ExpectationFailed(tc.err); got != tc.want {
			t.Errorf("ExpectationFailed(%v): %v, want %v", tc.err, got, tc.want)
		}
	}
}

// A message refused for its size is one nats.go would not send or a
// stream would not store for its size, and nothing else.
func TestTooLarge(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		err  error
		want bool
	}{
		{fmt.Errorf("claim: %w", nats.ErrMaxPayload), true},
		{&jetstream.APIError{ErrorCode: jetstream.JSErrCodeStreamMessageExceedsMaximum}, true},
		{fmt.Errorf("publish: %w", &jetstream.APIError{ErrorCode: jsapi.CodeHeaderExceedsMaximum}), true},
		{&jetstream.APIError{ErrorCode: jsapi.CodeStoreFailed, Description: "Message too large"}, true},
		{&jetstream.APIError{ErrorCode: jsapi.CodeStoreFailed, Description: "maximum bytes exceeded"}, false},
		{&jetstream.APIError{ErrorCode: jetstream.JSErrCodeStreamWrongLastSequence}, false},
		{nats.ErrTimeout, false},
		{nil, false},
	} {
		if got := jsapi.TooLarge(tc.err); got != tc.want {
			t.Errorf("TooLarge(%v) = %v, want %v", tc.err, got, tc.want)
		}
	}
}

// A cluster's answers that pass by themselves are Unavailable; an asset
// offline for a reason (the server cannot run it) is not.
func TestUnavailableAnswers(t *testing.T) {
	for code, want := range map[jetstream.ErrorCode]bool{
		jsapi.CodeClusterNotAvailable: true, jsapi.CodeStreamOffline: true, jsapi.CodeConsumerOffline: true,
		10194: false, 10195: false, jetstream.JSErrCodeStreamNotFound: false,
	} {
		err := fmt.Errorf("watch: %w", &jetstream.APIError{Code: 500, ErrorCode: code})
		if got := jsapi.Unavailable(err); got != want {
			t.Errorf("error code %d: Unavailable %v, want %v", code, got, want)
		}
	}
}
