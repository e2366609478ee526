package consumer_test

import (
	"testing"

	"github.com/corral-go/corral/consumer"
	"github.com/corral-go/corral/internal/natstest"
	"github.com/corral-go/corral/supervisor"
)

// oneWarningPerEpisode checks that the failures to consume rec holds form
// episodes, each a warning then debug lines and ended by
// consumer.ConsumeRecovered.
func oneWarningPerEpisode(t *testing.T, rec *natstest.Recorder) {
	t.Helper()
	open, episodes := false, 0
	for _, e := range rec.Events() {
		switch e := e.(type) {
		case consumer.ConsumeError:
			switch {
			case e.Level() == supervisor.DebugLevel && open:
			case e.Level() == supervisor.WarnLevel && !open:
				open = true
				episodes++
			default:
				t.Fatalf("%s %v (repeated %d) in an episode that is open: %v", e.Level(), e.Err, e.Repeated, open)
			}
		case consumer.ConsumeRecovered:
			if !open || e.Failures == 0 {
				t.Fatalf("%+v without an episode to end", e)
			}
			open = false
		}
	}
	// A kill may show as a disconnect alone, which the connection reports:
	// the handler then has nothing to report, and no episode is open.
	if open {
		t.Fatalf("%d episodes of failures to consume, the last not ended", episodes)
	}
	t.Logf("%d episodes of failures to consume, each one warning and ended", episodes)
}
