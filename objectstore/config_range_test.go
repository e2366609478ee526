package objectstore_test

import (
	"errors"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/corral-go/corral/objectstore"
	"github.com/corral-go/corral/supervisor"
)

// Each numeric setting out of its range is refused at Validate, naming
// its field: a ttl near the largest duration used to pass to the server,
// and a negative ttl or size was reported under no field at all.
func TestConfigRanges(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		field string
		cfg   objectstore.Config
	}{
		{"ttl", objectstore.Config{TTL: -1}},
		{"ttl", objectstore.Config{TTL: 87600*time.Hour + 1}},
		{"ttl", objectstore.Config{TTL: math.MaxInt64}},
		{"max_bytes", objectstore.Config{MaxBytes: -1}},
		{"replicas", objectstore.Config{Replicas: -1}},
		{"replicas", objectstore.Config{Replicas: 6}},
	} {
		err := tc.cfg.Validate()
		if !errors.Is(err, supervisor.ErrInvalidConfig) || !strings.Contains(err.Error(), tc.field+":") {
			t.Errorf("%s: got %v, want an error naming %s", tc.field, err, tc.field)
		}
	}
	top := objectstore.Config{TTL: 87600 * time.Hour, MaxBytes: math.MaxInt64, Replicas: 5}
	if err := top.Validate(); err != nil {
		t.Errorf("the top of every range: %v", err)
	}
}
