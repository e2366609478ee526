package episode

import "testing"

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
