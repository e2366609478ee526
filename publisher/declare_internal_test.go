package publisher

import (
	"context"
	"fmt"
	"testing"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/corral-go/corral/internal/jsapi"
	"github.com/corral-go/corral/stream"
)

// Only the server's refusals of a declaration, and a server too old for a
// stream's message schedules, are recorded against PublishSync; what
// passes is declared again.
func TestRefused(t *testing.T) {
	t.Parallel()
	api := func(code int, errCode jetstream.ErrorCode) error {
		return fmt.Errorf("publisher: declare stream %q: %w", "S",
			&jetstream.APIError{Code: code, ErrorCode: errCode})
	}
	for _, tc := range []struct {
		name string
		err  error
		want bool
	}{
		{"subjects overlap", api(400, 10065), true},
		{"invalid configuration", api(500, jsapi.CodeStreamInvalidConfig), true},
		{"update not possible in place", api(500, jsapi.CodeStreamUpdate), true},
		{"replicas not supported", api(500, jsapi.CodeStreamReplicasNotSupported), true},
		{"cluster not available", api(503, 10008), false},
		{"JetStream not enabled", api(503, 10076), false},
		{"no leader", api(500, 10009), false},
		{"no responders", fmt.Errorf("declare: %w", nats.ErrNoResponders), false},
		{"deadline", fmt.Errorf("declare: %w", context.DeadlineExceeded), false},
		{"connection closed", fmt.Errorf("declare: %w", nats.ErrConnectionClosed), false},
		{"server too old for schedules", fmt.Errorf("declare: %w", stream.ErrSchedulesUnsupported), true},
	} {
		if got := refused(tc.err); got != tc.want {
			t.Errorf("%s: refused %v, want %v", tc.name, got, tc.want)
		}
	}
}
