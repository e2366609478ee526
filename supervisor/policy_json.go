package supervisor

import (
	"encoding/json"
	"time"

	"github.com/corral-go/corral/internal/conf"
)

// policyJSON is a Policy as JSON: its durations as Go durations.
type policyJSON struct {
	Mode             Mode
	FailureThreshold float64
	FailureDecay     conf.JSONDuration
	RestartDelay     conf.JSONDuration
	Backoff          conf.JSONDuration
	Jitter           *float64
	ShutdownTimeout  conf.JSONDuration
}

// MarshalJSON writes p with its durations as Go durations ("15s", as a
// configuration writes them), not as nanoseconds.
func (p Policy) MarshalJSON() ([]byte, error) {
	return json.Marshal(policyJSON{Mode: p.Mode, FailureThreshold: p.FailureThreshold, FailureDecay: conf.JSONDuration(p.FailureDecay),
		RestartDelay: conf.JSONDuration(p.RestartDelay), Backoff: conf.JSONDuration(p.Backoff), Jitter: p.Jitter,
		ShutdownTimeout: conf.JSONDuration(p.ShutdownTimeout)})
}

// UnmarshalJSON reads what MarshalJSON writes; a duration may also be a
// number of nanoseconds, as earlier versions wrote it.
func (p *Policy) UnmarshalJSON(b []byte) error {
	var j policyJSON
	if err := json.Unmarshal(b, &j); err != nil {
		return err
	}
	*p = Policy{Mode: j.Mode, FailureThreshold: j.FailureThreshold, FailureDecay: time.Duration(j.FailureDecay),
		RestartDelay: time.Duration(j.RestartDelay), Backoff: time.Duration(j.Backoff), Jitter: j.Jitter,
		ShutdownTimeout: time.Duration(j.ShutdownTimeout)}
	return nil
}
