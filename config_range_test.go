package corral_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/corral-go/corral"
	"github.com/corral-go/corral/connection"
	"github.com/corral-go/corral/supervisor"
	"github.com/corral-go/corral/tasks"
)

// Validate refuses a task queue that tasks.New would refuse: a queue name
// of 239 to 251 bytes is a valid bucket name, but too long for the lease
// bucket corral_tasks_<queue>, and passed Validate only to fail at New;
// so did a stream too long for its held stream <stream>_HELD.
var nop = tasks.HandlerFunc(func(context.Context, *tasks.Task) error { return nil })

func TestConfigRefusesTaskQueueNamesTasksNewRefuses(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		queue string
		cfg   tasks.Config
		field string
		want  string
	}{
		{strings.Repeat("q", 239), tasks.Config{}, "tasks." + strings.Repeat("q", 239) + ":", "239 bytes, the limit is 238"},
		{strings.Repeat("q", 251), tasks.Config{}, "tasks." + strings.Repeat("q", 251) + ":", "251 bytes, the limit is 238"},
		{"q", tasks.Config{Stream: strings.Repeat("S", 251)}, "tasks.q.stream:", "251 bytes, the limit is 250"},
	} {
		cfg := corral.Config{Tasks: map[string]tasks.Config{tc.queue: tc.cfg}}
		err := cfg.Validate()
		if !errors.Is(err, corral.ErrInvalidConfig) || !strings.Contains(err.Error(), tc.field) ||
			!strings.Contains(err.Error(), tc.want) {
			t.Errorf("%d-byte queue, %d-byte stream: got %v, want an error naming %s and saying %q",
				len(tc.queue), len(tc.cfg.Stream), err, tc.field, tc.want)
			continue
		}
		if _, err := tasks.New(tc.queue, tc.cfg, connection.NewFixed(nil), nop); !errors.Is(err, supervisor.ErrInvalidConfig) ||
			!strings.Contains(err.Error(), tc.want) {
			t.Errorf("%d-byte queue, %d-byte stream: tasks.New: got %v, want ErrInvalidConfig saying %q too",
				len(tc.queue), len(tc.cfg.Stream), err, tc.want)
		}
	}
	for _, tc := range []struct {
		queue string
		cfg   tasks.Config
	}{
		{strings.Repeat("q", 238), tasks.Config{}},
		{"q", tasks.Config{Stream: strings.Repeat("S", 250)}},
	} {
		cfg := corral.Config{Tasks: map[string]tasks.Config{tc.queue: tc.cfg}}
		if err := cfg.Validate(); err != nil {
			t.Errorf("%d-byte queue, %d-byte stream, at the limit: %v", len(tc.queue), len(tc.cfg.Stream), err)
		}
		if _, err := tasks.New(tc.queue, tc.cfg, connection.NewFixed(nil), nop); err != nil {
			t.Errorf("%d-byte queue, %d-byte stream, at the limit: tasks.New: %v", len(tc.queue), len(tc.cfg.Stream), err)
		}
	}
}
