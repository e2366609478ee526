package embedded_test

import (
	"errors"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/corral-go/corral/embedded"
)

// Each numeric setting out of its range is refused at Validate, naming
// its field: a start_timeout near the largest duration used to pass.
func TestConfigRanges(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		field string
		cfg   embedded.Config
	}{
		{"port", embedded.Config{Port: -1}},
		{"port", embedded.Config{Port: 65536}},
		{"max_memory", embedded.Config{MaxMemory: -1}},
		{"max_store", embedded.Config{MaxStore: -1}},
		{"start_timeout", embedded.Config{StartTimeout: -1}},
		{"start_timeout", embedded.Config{StartTimeout: 24*time.Hour + 1}},
		{"start_timeout", embedded.Config{StartTimeout: math.MaxInt64}},
	} {
		err := tc.cfg.Validate()
		if !errors.Is(err, embedded.ErrInvalidConfig) || !strings.Contains(err.Error(), tc.field+":") {
			t.Errorf("%s: got %v, want an error naming %s", tc.field, err, tc.field)
		}
	}
	top := embedded.Config{Port: 65535, MaxMemory: math.MaxInt64, MaxStore: math.MaxInt64, StartTimeout: 24 * time.Hour}
	if err := top.Validate(); err != nil {
		t.Errorf("the top of every range: %v", err)
	}
}
