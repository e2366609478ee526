package supervisor

import (
	"fmt"
	"math"
	"strconv"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/corral-go/corral/internal/backoff"
	"github.com/corral-go/corral/internal/conf"
)

// Mode says when a child that stopped is started again (Erlang's restart
// types).
type Mode string

const (
	// Permanent children are always restarted, even after a clean return.
	Permanent Mode = "permanent"
	// Transient children are restarted only when they fail (return an
	// error or panic); a clean return ends them.
	Transient Mode = "transient"
	// Temporary children are never restarted.
	Temporary Mode = "temporary"
)

// Policy is how a child is restarted and stopped. Zero fields take the
// value of the policy it inherits from (see Inherit), then the defaults
// below. In YAML a policy is either a mapping of these fields or just a
// mode: `restart: transient`.
type Policy struct {
	// Mode is permanent, transient or temporary. Default permanent.
	Mode Mode `yaml:"mode"`
	// FailureThreshold is how many recent failures (decayed, see
	// FailureDecay) pause restarts for Backoff. Range 0 to 1e6 (past a
	// million nothing ever pauses). Default 5.
	FailureThreshold float64 `yaml:"failure_threshold"`
	// FailureDecay is the half-life of the failure count. Range 1s to 24h.
	// Default 30s.
	FailureDecay time.Duration `yaml:"failure_decay"`
	// RestartDelay is the wait before the first restart after a failure;
	// it doubles with each consecutive failure, up to Backoff. A run that
	// lasts longer than FailureDecay resets it. Range 0 to 24h, and no
	// longer than Backoff: with jitter a delay is at most twice that, far
	// from overflowing a time.Duration. Default 100ms.
	RestartDelay time.Duration `yaml:"restart_delay"`
	// Backoff is the pause once FailureThreshold is passed, and the cap of
	// RestartDelay. Range 0 to 24h. Default 15s.
	Backoff time.Duration `yaml:"backoff"`
	// Jitter is the random fraction (0 to 1) added to every delay, so that
	// many clients do not restart in step. Default 0.5; nil inherits, a
	// pointer to 0 turns it off.
	Jitter *float64 `yaml:"jitter"`
	// ShutdownTimeout bounds how long the child may take to stop. Range 0
	// to 24h. Default 10s.
	ShutdownTimeout time.Duration `yaml:"shutdown_timeout"`
}

// maxFailureThreshold bounds FailureThreshold: a million failures.
const maxFailureThreshold = 1e6

// Defaults is the policy every child inherits from last.
func Defaults() Policy {
	j := 0.5
	return Policy{
		Mode:             Permanent,
		FailureThreshold: 5,
		FailureDecay:     30 * time.Second,
		RestartDelay:     100 * time.Millisecond,
		Backoff:          15 * time.Second,
		Jitter:           &j,
		ShutdownTimeout:  10 * time.Second,
	}
}

// Inherit returns p with every zero field taken from parent.
func (p Policy) Inherit(parent Policy) Policy {
	if p.Mode == "" {
		p.Mode = parent.Mode
	}
	if p.FailureThreshold == 0 {
		p.FailureThreshold = parent.FailureThreshold
	}
	if p.FailureDecay == 0 {
		p.FailureDecay = parent.FailureDecay
	}
	if p.RestartDelay == 0 {
		p.RestartDelay = parent.RestartDelay
	}
	if p.Backoff == 0 {
		p.Backoff = parent.Backoff
	}
	if p.Jitter == nil && parent.Jitter != nil {
		j := *parent.Jitter
		p.Jitter = &j
	}
	if p.ShutdownTimeout == 0 {
		p.ShutdownTimeout = parent.ShutdownTimeout
	}
	return p
}

// Validate reports every invalid field at once, wrapping ErrInvalidConfig.
func (p Policy) Validate() error {
	pr := conf.NewProblems("")
	switch p.Mode {
	case "", Permanent, Transient, Temporary:
	default:
		pr.Addf("mode", "%q is not one of permanent, transient, temporary", p.Mode)
	}
	if p.FailureThreshold < 0 || p.FailureThreshold > maxFailureThreshold || math.IsNaN(p.FailureThreshold) {
		pr.Addf("failure_threshold", "must be between 0 and %g, got %v", float64(maxFailureThreshold), p.FailureThreshold)
	}
	pr.Durations(conf.MaxPolicyDuration,
		conf.NamedDuration{Name: "failure_decay", V: p.FailureDecay}, conf.NamedDuration{Name: "restart_delay", V: p.RestartDelay},
		conf.NamedDuration{Name: "backoff", V: p.Backoff}, conf.NamedDuration{Name: "shutdown_timeout", V: p.ShutdownTimeout})
	if p.FailureDecay > 0 && p.FailureDecay < time.Second {
		pr.Addf("failure_decay", "must be at least 1s, got %v", p.FailureDecay)
	}
	if p.RestartDelay > 0 && p.Backoff > 0 && p.RestartDelay > p.Backoff {
		pr.Addf("restart_delay", "%v is longer than backoff %v", p.RestartDelay, p.Backoff)
	}
	if p.Jitter != nil && (*p.Jitter < 0 || *p.Jitter > 1 || math.IsNaN(*p.Jitter)) {
		pr.Addf("jitter", "must be between 0 and 1, got %v", *p.Jitter)
	}
	return pr.Err()
}

// Grace is how much of the shutdown timeout a child spends finishing its
// work before it cancels what still runs: all of it but a tenth, at most a
// second, which is left for the cancelled work to return.
func (p Policy) Grace() time.Duration {
	return p.ShutdownTimeout - min(p.ShutdownTimeout/10, time.Second)
}

// UnmarshalYAML accepts a bare mode (`restart: transient`) or a mapping.
func (p *Policy) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind == yaml.ScalarNode {
		*p = Policy{Mode: Mode(n.Value)}
		return nil
	}
	type plain Policy
	return conf.DecodeNodeStrict(n, (*plain)(p))
}

// Shorthand names the field a bare scalar sets, `restart: transient` in
// YAML: the mode. It lets CORRAL_RESTART=temporary set the mode as
// CORRAL_RESTART_MODE does, keeping the other fields the file sets.
func (Policy) Shorthand() string { return "mode" }

// jitter adds up to frac of a delay at random.
type jitter struct {
	frac float64
	rnd  func() float64
}

// Jitter returns d plus up to frac of it. It never wraps: a sum past the
// largest duration is that, and a negative or NaN draw adds nothing.
func (j jitter) Jitter(d time.Duration) time.Duration {
	if d <= 0 {
		return d
	}
	extra := float64(d) * j.frac * j.rnd()
	switch {
	case !(extra > 0): // also NaN
		return d
	case extra >= math.MaxInt64: // past what a duration holds
		return math.MaxInt64
	}
	return backoff.AddSat(d, time.Duration(extra))
}

// delay is the wait before restart number n (from 1) of a run of
// consecutive failures: RestartDelay doubled n-1 times, capped at Backoff
// without ever overflowing.
func (p Policy) delay(n int) time.Duration {
	return backoff.Doubling(p.RestartDelay, p.Backoff, n-1)
}

// String describes the policy on one line, for logs and status; a
// jitter left to inherit reads "inherit".
func (p Policy) String() string {
	j := "inherit"
	if p.Jitter != nil {
		j = strconv.FormatFloat(*p.Jitter, 'g', -1, 64)
	}
	return fmt.Sprintf("%s threshold=%g decay=%v delay=%v backoff=%v jitter=%s shutdown=%v",
		p.Mode, p.FailureThreshold, p.FailureDecay, p.RestartDelay, p.Backoff, j, p.ShutdownTimeout)
}
