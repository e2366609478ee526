package publisher_test

import (
	"errors"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/corral-go/corral/publisher"
	"github.com/corral-go/corral/supervisor"
)

// Each numeric setting out of its range is refused at Validate, naming
// its field: a max_in_flight near MaxInt64 used to pass and overflow the
// 2*max_in_flight+1 pending acks asked of nats.go, and a retry_wait near
// the largest duration wrapped in the doubling.
func TestConfigRanges(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		field string
		cfg   publisher.Config
	}{
		{"buffer_msgs", publisher.Config{BufferMsgs: -1}},
		{"buffer_msgs", publisher.Config{BufferMsgs: 1<<24 + 1}},
		{"buffer_bytes", publisher.Config{BufferBytes: -1}},
		{"buffer_bytes", publisher.Config{BufferBytes: 1<<40 + 1}},
		{"max_in_flight", publisher.Config{MaxInFlight: -1}},
		{"max_in_flight", publisher.Config{MaxInFlight: 1<<16 + 1}},
		{"max_in_flight", publisher.Config{MaxInFlight: math.MaxInt64}},
		{"ack_timeout", publisher.Config{AckTimeout: -1}},
		{"ack_timeout", publisher.Config{AckTimeout: 24*time.Hour + 1}},
		{"retry_wait", publisher.Config{RetryWait: -1}},
		{"retry_wait", publisher.Config{RetryWait: math.MaxInt64}},
		{"max_retry_wait", publisher.Config{MaxRetryWait: -1}},
		{"max_retry_wait", publisher.Config{MaxRetryWait: math.MaxInt64}},
		{"max_attempts", publisher.Config{MaxAttempts: -2}},
		{"max_attempts", publisher.Config{MaxAttempts: math.MaxInt32 + 1}},
	} {
		err := tc.cfg.Validate()
		if !errors.Is(err, supervisor.ErrInvalidConfig) || !strings.Contains(err.Error(), tc.field+":") {
			t.Errorf("%s: got %v, want an error naming %s", tc.field, err, tc.field)
		}
	}
	// Every problem is reported at once.
	err := publisher.Config{BufferMsgs: -1, MaxInFlight: -1, AckTimeout: -1, MaxAttempts: -2}.Validate()
	for _, field := range []string{"buffer_msgs:", "max_in_flight:", "ack_timeout:", "max_attempts:"} {
		if err == nil || !strings.Contains(err.Error(), field) {
			t.Errorf("all at once: got %v, want it to name %s", err, field)
		}
	}
	for _, c := range []publisher.Config{
		{BufferMsgs: 1 << 24, BufferBytes: 1 << 40, MaxInFlight: 1 << 16, AckTimeout: 24 * time.Hour,
			RetryWait: 24 * time.Hour, MaxRetryWait: 24 * time.Hour, MaxAttempts: math.MaxInt32},
		{MaxAttempts: -1},
	} {
		if err := c.Validate(); err != nil {
			t.Errorf("the edges of every range: %v", err)
		}
	}
}
