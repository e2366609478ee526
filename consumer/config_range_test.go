package consumer_test

import (
	"errors"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/corral-go/corral/consumer"
	"github.com/corral-go/corral/supervisor"
)

// Each numeric setting out of its range is refused at Validate, naming
// its field: a queue_size of 1TiB used to pass and then take the process
// down allocating the queue, and one near MaxInt64 panicked in makechan.
func TestConfigRanges(t *testing.T) {
	t.Parallel()
	core := func(c consumer.Config) consumer.Config { c.Subject = "orders"; return c }
	js := func(j consumer.JetStream) consumer.Config { j.Stream = "ORDERS"; return consumer.Config{JetStream: j} }
	for _, tc := range []struct {
		field string
		cfg   consumer.Config
	}{
		{"workers", core(consumer.Config{Workers: -1})},
		{"workers", core(consumer.Config{Workers: 1<<16 + 1})},
		{"queue_size", core(consumer.Config{QueueSize: -1})},
		{"queue_size", core(consumer.Config{QueueSize: 1 << 40})},
		{"queue_size", core(consumer.Config{QueueSize: math.MaxInt64})},
		{"timeout", core(consumer.Config{Timeout: -1})},
		{"timeout", core(consumer.Config{Timeout: math.MaxInt64})},
		{"pending_msgs", core(consumer.Config{PendingMsgs: -2})},
		{"pending_msgs", core(consumer.Config{PendingMsgs: math.MaxInt32 + 1})},
		{"pending_bytes", core(consumer.Config{PendingBytes: 1<<40 + 1})},
		{"restart.backoff", core(consumer.Config{})},
		{"ack_wait", js(consumer.JetStream{AckWait: math.MaxInt64})},
		{"ack_wait", js(consumer.JetStream{AckWait: time.Millisecond})},
		{"max_deliver", js(consumer.JetStream{MaxDeliver: -2})},
		{"max_deliver", js(consumer.JetStream{MaxDeliver: math.MaxInt32 + 1})},
		{"backoff[1]", js(consumer.JetStream{Backoff: []time.Duration{time.Second, math.MaxInt64}})},
		{"max_ack_pending", js(consumer.JetStream{MaxAckPending: math.MaxInt32 + 1})},
		{"inactive_threshold", js(consumer.JetStream{InactiveThreshold: math.MaxInt64})},
		{"slow_after", js(consumer.JetStream{SlowAfter: -1})},
	} {
		if tc.field == "restart.backoff" {
			tc.cfg.Restart.Backoff = math.MaxInt64
		}
		err := tc.cfg.Validate()
		if !errors.Is(err, supervisor.ErrInvalidConfig) || !strings.Contains(err.Error(), tc.field+":") {
			t.Errorf("%s: got %v, want an error naming %s", tc.field, err, tc.field)
		}
	}
	top := consumer.Config{Subject: "orders", Workers: 1 << 16, QueueSize: 1 << 20, Timeout: 87600 * time.Hour,
		PendingMsgs: math.MaxInt32, PendingBytes: 1 << 40}
	if err := top.Validate(); err != nil {
		t.Errorf("the top of every range: %v", err)
	}
}
