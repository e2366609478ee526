package connection

import (
	"testing"
	"time"

	"github.com/nats-io/nats.go"
)

// natsOptions applies the options a supervisor of cfg gives nats.go.
func natsOptions(t *testing.T, cfg Config) nats.Options {
	t.Helper()
	s, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	o := nats.GetDefaultOptions()
	for _, opt := range s.options(&live{closed: make(chan struct{})}) {
		if err := opt(&o); err != nil {
			t.Fatal(err)
		}
	}
	return o
}

// The delay nats.go waits after each full round of the server list is
// reconnect_wait doubled per round up to max_reconnect_wait, plus jitter
// in [0, reconnect_jitter), over many draws and every round; long waits
// do not overflow into short ones.
func TestReconnectDelayStaysWithinBounds(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name                  string
		wait, maxWait, jitter time.Duration
		wantFirst, wantCapped time.Duration // base delays of the first round and once capped
	}{
		{name: "defaults", wantFirst: 250 * time.Millisecond, wantCapped: 4 * time.Second},
		{name: "set", wait: 100 * time.Millisecond, maxWait: time.Second, jitter: 50 * time.Millisecond,
			wantFirst: 100 * time.Millisecond, wantCapped: time.Second},
		// 2^34+1 ns shifted by 30 wraps to 2^30 ns, shorter than both.
		{name: "long wait", wait: 1<<34 + 1, maxWait: time.Hour, jitter: time.Second,
			wantFirst: 1<<34 + 1, wantCapped: time.Hour},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			o := natsOptions(t, Config{Servers: []string{"nats://127.0.0.1:4222"},
				ReconnectWait: tt.wait, MaxReconnectWait: tt.maxWait, ReconnectJitter: tt.jitter})
			if o.CustomReconnectDelayCB == nil {
				t.Fatal("no CustomReconnectDelayCB: nats.go would use its own fixed wait")
			}
			jitter := tt.jitter
			if jitter == 0 {
				jitter = 250 * time.Millisecond
			}
			for round := 1; round <= 100; round++ {
				base := min(tt.wantFirst<<min(round-1, 20), tt.wantCapped)
				lo, hi := base+jitter, time.Duration(0) // lowest and highest drawn
				for range 1000 {
					d := o.CustomReconnectDelayCB(round)
					if d < base || d >= base+jitter {
						t.Fatalf("round %d: delay %v, want in [%v, %v)", round, d, base, base+jitter)
					}
					lo, hi = min(lo, d), max(hi, d)
				}
				// 1000 uniform draws all in one half of the range: p = 2^-999.
				if hi-lo < jitter/2 {
					t.Fatalf("round %d: delays spread over %v, want jitter over most of %v", round, hi-lo, jitter)
				}
			}
		})
	}
}

// Every connection setting reaches nats.go's options.
func TestOptionsFromConfig(t *testing.T) {
	t.Parallel()
	off := false
	tests := []struct {
		name  string
		cfg   Config
		check func(t *testing.T, o nats.Options)
	}{
		{"defaults", Config{}, func(t *testing.T, o nats.Options) {
			if !o.AllowReconnect || o.MaxReconnect != -1 || o.ReconnectBufSize != 8<<20 || o.NoRandomize ||
				o.PingInterval != 5*time.Second || o.MaxPingsOut != 2 || o.Timeout != 2*time.Second || !o.RetryOnFailedConnect {
				t.Fatalf("got %+v", o)
			}
		}},
		{"reconnect off", Config{Reconnect: &off}, func(t *testing.T, o nats.Options) {
			if o.AllowReconnect {
				t.Fatal("AllowReconnect: got true, want false")
			}
		}},
		{"max reconnects, buffer off, in order", Config{MaxReconnects: 3, ReconnectBufSize: -1, NoRandomize: true}, func(t *testing.T, o nats.Options) {
			if !o.AllowReconnect || o.MaxReconnect != 3 || o.ReconnectBufSize != -1 || !o.NoRandomize {
				t.Fatalf("got AllowReconnect %v, MaxReconnect %d, ReconnectBufSize %d, NoRandomize %v",
					o.AllowReconnect, o.MaxReconnect, o.ReconnectBufSize, o.NoRandomize)
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			tt.cfg.Servers = []string{"nats://127.0.0.1:4222"}
			tt.check(t, natsOptions(t, tt.cfg))
		})
	}
}
