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

// Each numeric setting of a lock out of its range is refused at
// Validate, naming its field: a ttl or limit_marker_ttl near the largest
// duration used to pass to the server.
func TestLockConfigRanges(t *testing.T) {
	t.Parallel()
	lock := func(c kv.LockConfig) kv.LockConfig { c.Bucket, c.Key = "locks", "leader"; return c }
	for _, tc := range []struct {
		field string
		cfg   kv.LockConfig
	}{
		{"ttl", lock(kv.LockConfig{TTL: time.Second - 1})},
		{"ttl", lock(kv.LockConfig{TTL: -time.Second})},
		{"ttl", lock(kv.LockConfig{TTL: 87600*time.Hour + 1})},
		{"ttl", lock(kv.LockConfig{TTL: math.MaxInt64})},
		{"limit_marker_ttl", lock(kv.LockConfig{LimitMarkerTTL: time.Millisecond})},
		{"limit_marker_ttl", lock(kv.LockConfig{LimitMarkerTTL: -time.Second})},
		{"limit_marker_ttl", lock(kv.LockConfig{LimitMarkerTTL: math.MaxInt64})},
		{"replicas", lock(kv.LockConfig{Replicas: -1})},
		{"replicas", lock(kv.LockConfig{Replicas: 6})},
		{"value", lock(kv.LockConfig{Value: strings.Repeat("v", kv.MaxLockValueLen+1)})},
	} {
		err := tc.cfg.Validate()
		if !errors.Is(err, supervisor.ErrInvalidConfig) || !strings.Contains(err.Error(), tc.field+":") {
			t.Errorf("%s: got %v, want an error naming %s", tc.field, err, tc.field)
		}
	}
	for _, c := range []kv.LockConfig{
		lock(kv.LockConfig{TTL: 87600 * time.Hour, LimitMarkerTTL: 87600 * time.Hour, Replicas: 5}),
		lock(kv.LockConfig{TTL: time.Second, LimitMarkerTTL: time.Second}),
		lock(kv.LockConfig{Value: strings.Repeat("v", kv.MaxLockValueLen)}),
	} {
		if err := c.Validate(); err != nil {
			t.Errorf("the edges of every range: %v", err)
		}
	}
}
