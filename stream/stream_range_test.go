package stream_test

import (
	"errors"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/corral-go/corral/stream"
	"github.com/corral-go/corral/supervisor"
)

// Each numeric setting out of its range is refused at Validate, naming
// its field: a max_age or duplicates window near the largest duration
// used to pass to the server, and a negative size or age was reported
// under no field at all.
func TestConfigRanges(t *testing.T) {
	t.Parallel()
	subj := []string{"orders.>"}
	for _, tc := range []struct {
		field string
		cfg   stream.Config
	}{
		{"replicas", stream.Config{Subjects: subj, Replicas: -1}},
		{"replicas", stream.Config{Subjects: subj, Replicas: 6}},
		{"max_age", stream.Config{Subjects: subj, MaxAge: -1}},
		{"max_age", stream.Config{Subjects: subj, MaxAge: math.MaxInt64}},
		{"duplicates", stream.Config{Subjects: subj, Duplicates: -1}},
		{"duplicates", stream.Config{Subjects: subj, Duplicates: 87600*time.Hour + 1}},
		{"max_bytes", stream.Config{Subjects: subj, MaxBytes: -2}},
		{"max_msgs", stream.Config{Subjects: subj, MaxMsgs: -2}},
	} {
		err := tc.cfg.Validate()
		if !errors.Is(err, supervisor.ErrInvalidConfig) || !strings.Contains(err.Error(), tc.field+":") {
			t.Errorf("%s: got %v, want an error naming %s", tc.field, err, tc.field)
		}
	}
	for _, c := range []stream.Config{
		{Subjects: subj, Replicas: 5, MaxAge: 87600 * time.Hour, Duplicates: 87600 * time.Hour,
			MaxBytes: math.MaxInt64, MaxMsgs: math.MaxInt64},
		{Subjects: subj, MaxBytes: -1, MaxMsgs: -1},
	} {
		if err := c.Validate(); err != nil {
			t.Errorf("the edges of every range: %v", err)
		}
	}
}
