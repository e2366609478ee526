package tasks_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/corral-go/corral/connection"
	"github.com/corral-go/corral/internal/natstest"
	"github.com/corral-go/corral/supervisor"
	"github.com/corral-go/corral/tasks"
)

// A queue or stream name too long for the lease bucket or held stream
// named after it is refused by New, naming the length and the limit,
// instead of failing when the worker first declares them.
func TestQueueNameTooLongIsRefusedByNew(t *testing.T) {
	h := tasks.HandlerFunc(func(context.Context, *tasks.Task) error { return nil })
	for _, tc := range []struct {
		queue string
		cfg   tasks.Config
		want  string
	}{
		{strings.Repeat("q", 239), tasks.Config{}, "239 bytes, the limit is 238"},
		{strings.Repeat("q", 300), tasks.Config{}, "300 bytes, the limit is 238"}, // not a bucket's 251
		{"q", tasks.Config{Stream: strings.Repeat("S", 251)}, "251 bytes, the limit is 250"},
	} {
		_, err := tasks.New(tc.queue, tc.cfg, connection.NewFixed(nil), h)
		if !errors.Is(err, supervisor.ErrInvalidConfig) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("New(%d-byte queue, %d-byte stream): %v, want supervisor.ErrInvalidConfig saying %q",
				len(tc.queue), len(tc.cfg.Stream), err, tc.want)
		}
	}
}

// A queue whose name is at the limit runs its tasks: every name made from
// it fits.
func TestQueueNameAtTheLimitRuns(t *testing.T) {
	t.Parallel()
	srv := natstest.RunServer(t)
	queue := strings.Repeat("q", 238)
	done := newLedger()
	startWorker(t, srv.URL(), queue, tasks.Config{}, tasks.HandlerFunc(func(_ context.Context, task *tasks.Task) error {
		done.complete(task.ID())
		return nil
	}), nil)
	enqueue(t, natstest.Connect(t, srv.URL()), tasks.Config{}, queue, 3)
	done.waitCompleted(t, 3, 30*time.Second)
}
