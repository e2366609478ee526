package episode

import (
	"errors"
	"testing"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// A failure repeating the one before counts as a repeat; a different one,
// or one after a success, starts again at zero, so it is reported.
func TestRepeatsReportANewErrorAtOnce(t *testing.T) {
	var r Repeats
	for i, step := range []struct {
		msg  string // "" is a success
		want int
	}{
		{"no stream", 0}, {"no stream", 1}, {"no stream", 2}, {"stream full", 0}, {"stream full", 1},
		{"", 0}, {"stream full", 0},
	} {
		if step.msg == "" {
			r.End()
			continue
		}
		if got := r.Fail(step.msg); got != step.want {
			t.Fatalf("step %d (%s): %d repeats, want %d", i, step.msg, got, step.want)
		}
	}
}

// Failures that say JetStream cannot answer for now repeat one another
// whatever their words, as a lost node shows as several; another error
// among them is new.
func TestFailErrTakesUnavailableAsOne(t *testing.T) {
	var r Repeats
	for i, step := range []struct {
		err  error
		want int
	}{
		{nats.ErrTimeout, 0}, {jetstream.ErrNoHeartbeat, 1}, {jetstream.ErrConsumerLeadershipChanged, 2},
		{errors.New("stream full"), 0}, {nats.ErrNoResponders, 0}, {nats.ErrNoResponders, 1},
	} {
		if got := r.FailErr(step.err); got != step.want {
			t.Fatalf("step %d (%v): %d repeats, want %d", i, step.err, got, step.want)
		}
	}
}
