package tasks_test

import (
	"errors"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/corral-go/corral/supervisor"
	"github.com/corral-go/corral/tasks"
)

// Each numeric setting out of its range is refused at Validate, naming
// its field: max_concurrency had no bound, and a heartbeat near the
// largest duration wrapped when tripled into the lease check.
func TestConfigRanges(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		field string
		cfg   tasks.Config
	}{
		{"max_concurrency", tasks.Config{MaxConcurrency: -1}},
		{"max_concurrency", tasks.Config{MaxConcurrency: 1<<16 + 1}},
		{"prefetch", tasks.Config{Prefetch: -2}},
		{"prefetch", tasks.Config{Prefetch: 1<<16 + 1}},
		{"heartbeat", tasks.Config{Heartbeat: math.MaxInt64 / 2}},
		{"lease_ttl", tasks.Config{LeaseTTL: math.MaxInt64}},
		{"claim_wait", tasks.Config{ClaimWait: math.MaxInt64}},
		{"timeout", tasks.Config{Timeout: -1}},
		{"keep_completed", tasks.Config{KeepCompleted: math.MaxInt64}},
		{"sweep_every", tasks.Config{SweepEvery: math.MaxInt64}},
		{"keep_results", tasks.Config{KeepResults: math.MaxInt64}},
		{"keep_results", tasks.Config{KeepCompleted: time.Hour, KeepResults: time.Minute}},
		{"max_result", tasks.Config{MaxResult: -1}},
		{"max_result", tasks.Config{MaxResult: 64<<20 + 1}},
		{"max_failures", tasks.Config{MaxFailures: -2}},
		{"max_failures", tasks.Config{MaxFailures: math.MaxInt32 + 1}},
		{"backoff[0]", tasks.Config{Backoff: []time.Duration{math.MaxInt64}}},
		{"replicas", tasks.Config{Replicas: 6}},
	} {
		err := tc.cfg.Validate()
		if !errors.Is(err, supervisor.ErrInvalidConfig) || !strings.Contains(err.Error(), tc.field+":") {
			t.Errorf("%s: got %v, want an error naming %s", tc.field, err, tc.field)
		}
	}
	// Every problem is reported at once, those of other fields too.
	err := tasks.Config{Heartbeat: math.MaxInt64, MaxFailures: -2}.Validate()
	if err == nil || !strings.Contains(err.Error(), "heartbeat:") || !strings.Contains(err.Error(), "max_failures:") {
		t.Errorf("got %v, want heartbeat and max_failures both", err)
	}
	top := tasks.Config{MaxConcurrency: 1 << 16, Prefetch: 1 << 16, Heartbeat: 87600 * time.Hour / 3, LeaseTTL: 87600 * time.Hour,
		ClaimWait: 87600 * time.Hour / 2, KeepCompleted: 87600 * time.Hour, KeepResults: 87600 * time.Hour, SweepEvery: 87600 * time.Hour,
		MaxResult: 64 << 20,
		Timeout:   87600 * time.Hour, MaxFailures: math.MaxInt32}
	if err := top.Validate(); err != nil {
		t.Errorf("the top of every range: %v", err)
	}
}
