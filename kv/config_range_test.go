package kv_test

import (
	"errors"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/corral-go/corral/kv"
	"github.com/corral-go/corral/supervisor"
)

// Each numeric setting out of its range is refused at Validate, naming
// its field: a max_value_size of 4294967297 used to pass and be truncated
// to 32 bits, a bucket whose values could be 1 byte; 3GiB became
// unlimited.
func TestConfigRanges(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		field string
		cfg   kv.Config
	}{
		{"history", kv.Config{History: 65}},
		{"history", kv.Config{History: -1}},
		{"ttl", kv.Config{TTL: -1}},
		{"ttl", kv.Config{TTL: math.MaxInt64}},
		{"max_value_size", kv.Config{MaxValueSize: 4294967297}},
		{"max_value_size", kv.Config{MaxValueSize: 3 << 30}},
		{"max_value_size", kv.Config{MaxValueSize: math.MaxInt32 + 1}},
		{"max_value_size", kv.Config{MaxValueSize: -1}},
		{"max_bytes", kv.Config{MaxBytes: -1}},
		{"replicas", kv.Config{Replicas: 6}},
		{"limit_marker_ttl", kv.Config{LimitMarkerTTL: math.MaxInt64}},
		{"limit_marker_ttl", kv.Config{LimitMarkerTTL: -time.Second}},
		{"limit_marker_ttl", kv.Config{LimitMarkerTTL: time.Millisecond}},
	} {
		err := tc.cfg.Validate()
		if !errors.Is(err, supervisor.ErrInvalidConfig) || !strings.Contains(err.Error(), tc.field+":") {
			t.Errorf("%s: got %v, want an error naming %s", tc.field, err, tc.field)
		}
	}
	top := kv.Config{History: 64, TTL: 87600 * time.Hour, MaxValueSize: math.MaxInt32, MaxBytes: math.MaxInt64,
		Replicas: 5, LimitMarkerTTL: 87600 * time.Hour}
	if err := top.Validate(); err != nil {
		t.Errorf("the top of every range: %v", err)
	}
}
