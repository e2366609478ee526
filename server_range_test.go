package corral_test

import (
	"errors"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/corral-go/corral"
)

// Each numeric setting out of its range is refused at Validate, naming
// its field: a start_timeout near the largest duration used to pass.
func TestServerConfigRanges(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		field string
		cfg   corral.ServerConfig
	}{
		{"port", corral.ServerConfig{Port: -1}},
		{"port", corral.ServerConfig{Port: 65536}},
		{"max_memory", corral.ServerConfig{MaxMemory: -1}},
		{"max_store", corral.ServerConfig{MaxStore: -1}},
		{"start_timeout", corral.ServerConfig{StartTimeout: -1}},
		{"start_timeout", corral.ServerConfig{StartTimeout: 24*time.Hour + 1}},
		{"start_timeout", corral.ServerConfig{StartTimeout: math.MaxInt64}},
	} {
		err := tc.cfg.Validate()
		if !errors.Is(err, corral.ErrInvalidConfig) || !strings.Contains(err.Error(), tc.field+":") {
			t.Errorf("%s: got %v, want an error naming %s", tc.field, err, tc.field)
		}
	}
	top := corral.ServerConfig{Port: 65535, MaxMemory: math.MaxInt64, MaxStore: math.MaxInt64, StartTimeout: 24 * time.Hour}
	if err := top.Validate(); err != nil {
		t.Errorf("the top of every range: %v", err)
	}
}
