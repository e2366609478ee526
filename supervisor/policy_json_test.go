package supervisor_test

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/corral-go/corral/supervisor"
)

// A policy's durations are Go durations in JSON, and read back, as are the
// nanoseconds an earlier version wrote.
func TestPolicyJSON(t *testing.T) {
	jitter := 0.25
	p := supervisor.Policy{Mode: supervisor.Transient, FailureThreshold: 3, FailureDecay: time.Minute,
		RestartDelay: 150 * time.Millisecond, Backoff: 20 * time.Second, Jitter: &jitter, ShutdownTimeout: 0}
	b, err := json.Marshal(p)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"Mode":"transient","FailureThreshold":3,"FailureDecay":"1m0s","RestartDelay":"150ms","Backoff":"20s","Jitter":0.25,"ShutdownTimeout":"0s"}`
	if string(b) != want {
		t.Fatalf("got %s, want %s", b, want)
	}
	var back supervisor.Policy
	if err := json.Unmarshal(b, &back); err != nil || back.Backoff != p.Backoff || back.FailureDecay != p.FailureDecay ||
		back.RestartDelay != p.RestartDelay || *back.Jitter != jitter || back.Mode != p.Mode {
		t.Fatalf("read back %+v, %v", back, err)
	}
	if err := json.Unmarshal([]byte(`{"Backoff":15000000000}`), &back); err != nil || back.Backoff != 15*time.Second {
		t.Fatalf("nanoseconds: %+v, %v", back, err)
	}
	if err := json.Unmarshal([]byte(`{"Backoff":"soon"}`), &back); err == nil || !strings.Contains(err.Error(), "soon") {
		t.Fatalf("a bad duration: %v", err)
	}
}
