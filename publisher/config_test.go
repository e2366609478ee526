package publisher_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/corral-go/corral/publisher"
	"github.com/corral-go/corral/supervisor"
)

func TestValidateNamesEveryBadField(t *testing.T) {
	err := publisher.Config{MaxAttempts: -2, BufferMsgs: -1, OnFull: "drop"}.Validate()
	if !errors.Is(err, supervisor.ErrInvalidConfig) {
		t.Fatalf("got %v, want supervisor.ErrInvalidConfig", err)
	}
	for _, field := range []string{"max_attempts", "buffer_msgs", "on_full"} {
		if !strings.Contains(err.Error(), field) {
			t.Errorf("%q does not name %s", err, field)
		}
	}
	for _, n := range []int{-1, 0, 1, 50} {
		if err := (publisher.Config{MaxAttempts: n}).Validate(); err != nil {
			t.Errorf("max_attempts %d: %v", n, err)
		}
	}
}
