package supervisor_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/corral-go/corral/internal/conf"
	"github.com/corral-go/corral/supervisor"
)

func TestPolicyYAML(t *testing.T) {
	type section struct {
		Restart supervisor.Policy `yaml:"restart"`
	}
	tests := []struct {
		name    string
		yaml    string
		want    supervisor.Policy
		wantErr string
	}{
		{name: "bare mode", yaml: "restart: transient", want: supervisor.Policy{Mode: supervisor.Transient}},
		{
			name: "mapping",
			yaml: "restart: {mode: temporary, failure_threshold: 3, failure_decay: 10s, restart_delay: 50ms, backoff: 2s, shutdown_timeout: 1s}",
			want: supervisor.Policy{Mode: supervisor.Temporary, FailureThreshold: 3, FailureDecay: 10 * time.Second,
				RestartDelay: 50 * time.Millisecond, Backoff: 2 * time.Second, ShutdownTimeout: time.Second},
		},
		{name: "unknown key", yaml: "restart: {mode: permanent, retries: 3}", wantErr: "retries"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got section
			_, err := conf.DecodeYAML([]byte(tt.yaml), &got)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("got error %v, want one naming %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got.Restart.Mode != tt.want.Mode || got.Restart.FailureThreshold != tt.want.FailureThreshold ||
				got.Restart.FailureDecay != tt.want.FailureDecay || got.Restart.RestartDelay != tt.want.RestartDelay ||
				got.Restart.Backoff != tt.want.Backoff || got.Restart.ShutdownTimeout != tt.want.ShutdownTimeout {
				t.Fatalf("got %+v, want %+v", got.Restart, tt.want)
			}
		})
	}
}

func TestPolicyValidateReportsEveryField(t *testing.T) {
	j := 2.0
	p := supervisor.Policy{
		Mode: "sometimes", FailureThreshold: -1, FailureDecay: 10 * time.Millisecond,
		RestartDelay: time.Minute, Backoff: time.Second, Jitter: &j, ShutdownTimeout: -time.Second,
	}
	err := p.Validate()
	if !errors.Is(err, supervisor.ErrInvalidConfig) {
		t.Fatalf("got %v, want ErrInvalidConfig", err)
	}
	for _, field := range []string{"mode", "failure_threshold", "failure_decay", "restart_delay", "jitter", "shutdown_timeout"} {
		if !strings.Contains(err.Error(), field+":") {
			t.Errorf("error %q does not name %s", err, field)
		}
	}
}

func TestPolicyInherit(t *testing.T) {
	parent := supervisor.Policy{Mode: supervisor.Transient, Backoff: 3 * time.Second}
	got := supervisor.Policy{Backoff: time.Second}.Inherit(parent).Inherit(supervisor.Defaults())
	if got.Mode != supervisor.Transient {
		t.Errorf("mode: got %s, want inherited transient", got.Mode)
	}
	if got.Backoff != time.Second {
		t.Errorf("backoff: got %v, want own 1s", got.Backoff)
	}
	if got.FailureThreshold != 5 || got.ShutdownTimeout != 10*time.Second || got.Jitter == nil || *got.Jitter != 0.5 {
		t.Errorf("defaults not applied: %+v", got)
	}
}

// A policy prints whether or not its jitter is set: a configuration
// printed before defaults apply must not panic.
func TestPolicyString(t *testing.T) {
	if got := (supervisor.Policy{Mode: supervisor.Transient}).String(); !strings.Contains(got, "transient") || !strings.Contains(got, "jitter=inherit") {
		t.Errorf("unset policy: %q", got)
	}
	if got := supervisor.Defaults().String(); !strings.Contains(got, "jitter=0.5") || !strings.Contains(got, "shutdown=10s") {
		t.Errorf("defaults: %q", got)
	}
}
