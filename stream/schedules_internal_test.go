package stream

import (
	"errors"
	"strings"
	"testing"

	"github.com/nats-io/nats.go/jetstream"
)

// A stream read back without message schedules, as a server older than
// 2.12 returns it (it ignores the setting), is refused naming the stream,
// the version needed and the one connected; no such server is at hand to
// run, so the check is tested on the configuration read back.
func TestCheckSchedules(t *testing.T) {
	t.Parallel()
	if err := checkSchedules("TASKS_q", jetstream.StreamConfig{AllowMsgSchedules: true}, "2.15.3"); err != nil {
		t.Fatalf("a stream that kept schedules: %v", err)
	}
	err := checkSchedules("TASKS_q", jetstream.StreamConfig{Name: "TASKS_q"}, "2.11.9")
	if !errors.Is(err, ErrSchedulesUnsupported) {
		t.Fatalf("a stream without schedules: %v, want ErrSchedulesUnsupported", err)
	}
	for _, want := range []string{`"TASKS_q"`, "nats-server 2.12 or later", "connected to 2.11.9"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("got %q, want it to say %q", err, want)
		}
	}
	if err := checkSchedules("S", jetstream.StreamConfig{}, ""); err == nil || strings.Contains(err.Error(), "connected to") {
		t.Errorf("with no version known: %v, want an error that gives none", err)
	}
}
