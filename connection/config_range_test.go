package connection_test

import (
	"errors"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/corral-go/corral/connection"
	"github.com/corral-go/corral/supervisor"
)

// Each numeric setting out of its range is refused at Validate, naming
// its field: a reconnect_jitter or max_reconnect_wait near the largest
// duration used to pass and wrap in the reconnect delay, and counts past
// an int32 or a TiB had no bound.
func TestConfigRanges(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		field string
		cfg   connection.Config
	}{
		{"reconnect_wait", connection.Config{ReconnectWait: -1}},
		{"reconnect_wait", connection.Config{ReconnectWait: 24*time.Hour + 1, MaxReconnectWait: 24*time.Hour + 1}},
		{"max_reconnect_wait", connection.Config{MaxReconnectWait: math.MaxInt64}},
		{"reconnect_jitter", connection.Config{ReconnectJitter: -1}},
		{"reconnect_jitter", connection.Config{ReconnectJitter: math.MaxInt64}},
		{"ping_interval", connection.Config{PingInterval: -1}},
		{"ping_interval", connection.Config{PingInterval: time.Millisecond}},
		{"ping_interval", connection.Config{PingInterval: 24*time.Hour + 1}},
		{"connect_timeout", connection.Config{ConnectTimeout: -1}},
		{"connect_timeout", connection.Config{ConnectTimeout: math.MaxInt64}},
		{"drain_timeout", connection.Config{DrainTimeout: 24*time.Hour + 1}},
		{"max_reconnects", connection.Config{MaxReconnects: -2}},
		{"max_reconnects", connection.Config{MaxReconnects: math.MaxInt32 + 1}},
		{"max_pings_outstanding", connection.Config{MaxPingsOutstanding: -1}},
		{"max_pings_outstanding", connection.Config{MaxPingsOutstanding: 1001}},
		{"reconnect_buf_size", connection.Config{ReconnectBufSize: -2}},
		{"reconnect_buf_size", connection.Config{ReconnectBufSize: 1<<40 + 1}},
	} {
		err := tc.cfg.Validate()
		if !errors.Is(err, supervisor.ErrInvalidConfig) || !strings.Contains(err.Error(), tc.field+":") {
			t.Errorf("%s: got %v, want an error naming %s", tc.field, err, tc.field)
		}
	}
	// Every problem is reported at once.
	err := connection.Config{ReconnectJitter: -1, MaxReconnects: -2, MaxPingsOutstanding: -1}.Validate()
	for _, field := range []string{"reconnect_jitter:", "max_reconnects:", "max_pings_outstanding:"} {
		if err == nil || !strings.Contains(err.Error(), field) {
			t.Errorf("all at once: got %v, want it to name %s", err, field)
		}
	}
	const day = 24 * time.Hour
	for _, c := range []connection.Config{
		{ReconnectWait: day, MaxReconnectWait: day, ReconnectJitter: day, PingInterval: day, ConnectTimeout: day,
			DrainTimeout: day, MaxReconnects: math.MaxInt32, MaxPingsOutstanding: 1000, ReconnectBufSize: 1 << 40},
		{PingInterval: 10 * time.Millisecond, MaxReconnects: -1, ReconnectBufSize: -1},
	} {
		if err := c.Validate(); err != nil {
			t.Errorf("the edges of every range: %v", err)
		}
	}
}
