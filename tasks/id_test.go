package tasks_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/corral-go/corral/tasks"
)

// taskMsg is a task with id and data as Enqueue would publish it.
func taskMsg(id string, data []byte) *nats.Msg {
	m := nats.NewMsg("corral.tasks.q")
	m.Header.Set(jetstream.MsgIDHeader, id)
	m.Data = data
	return m
}

// CheckTask takes an id that reaches the server as given, outside the
// queue's own space, and refuses every other, naming the rule.
func TestCheckTaskIDs(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		id   string
		want error
	}{
		{"order:1", nil},
		{"é/ü a.b*>", nil},
		{strings.Repeat("i", tasks.MaxIDLen), nil},
		{"corral-task-x", nil}, // the server's Msg-Ids are case-sensitive
		{"", tasks.ErrInvalidTaskID},
		{strings.Repeat("i", tasks.MaxIDLen+1), tasks.ErrInvalidTaskID},
		{"a\xffb", tasks.ErrInvalidTaskID},
		{"a\x00b", tasks.ErrInvalidTaskID},
		{"line\nbreak", tasks.ErrInvalidTaskID},
		{" padded", tasks.ErrInvalidTaskID},
		{"padded\t", tasks.ErrInvalidTaskID},
		{"padded\u00a0", tasks.ErrInvalidTaskID},
		{tasks.ReservedMsgIDPrefix + "put-back:x:1", tasks.ErrReservedMsgID},
		{" " + tasks.ReservedMsgIDPrefix + "put-back:x:1", tasks.ErrReservedMsgID},
		{"\t" + tasks.ReservedMsgIDPrefix + "seq-1", tasks.ErrReservedMsgID},
	} {
		err := tasks.CheckTask("q", taskMsg(tc.id, nil), 1<<20)
		if tc.want == nil && err != nil || tc.want != nil && !errors.Is(err, tc.want) {
			t.Errorf("CheckTask(id %q): %v, want %v", tc.id, err, tc.want)
		}
	}
}

// CheckTask refuses a header of the queue's own or a message schedule's,
// naming it, and a task
// whose headers a stream could not store once the queue's writes add
// theirs.
func TestCheckTaskHeaders(t *testing.T) {
	t.Parallel()
	m := taskMsg("x", nil)
	m.Header.Set(tasks.AttemptHeader, "7")
	if err := tasks.CheckTask("q", m, 1<<20); !errors.Is(err, tasks.ErrReservedHeader) || !strings.Contains(err.Error(), tasks.AttemptHeader) {
		t.Fatalf("CheckTask with %s: %v, want ErrReservedHeader naming it", tasks.AttemptHeader, err)
	}
	// The queue's stream allows message schedules: a caller's would be a
	// schedule nobody declared, or pass for one's fired copy.
	for _, k := range []string{"Nats-Schedule", "Nats-Schedule-Target", "Nats-Schedule-Time-Zone", "Nats-Scheduler", "Nats-Schedule-Next"} {
		m = taskMsg("x", nil)
		m.Header.Set(k, "@at 2030-01-01T00:00:00Z")
		if err := tasks.CheckTask("q", m, 1<<20); !errors.Is(err, tasks.ErrReservedHeader) || !strings.Contains(err.Error(), k) {
			t.Errorf("CheckTask with %s: %v, want ErrReservedHeader naming it", k, err)
		}
	}
	m = taskMsg("x", nil)
	m.Header.Set("Big", strings.Repeat("h", 65000))
	var tooLarge *tasks.TooLargeError
	if err := tasks.CheckTask("q", m, 8<<20); !errors.As(err, &tooLarge) || !tooLarge.Headers || errors.Is(err, nats.ErrMaxPayload) ||
		!strings.Contains(err.Error(), "a stream stores at most 65535") {
		t.Fatalf("CheckTask with 65000 bytes of headers: %v, want a *TooLargeError on headers", err)
	}
	m.Header.Set("Big", strings.Repeat("h", 65000-tooLarge.Size+tooLarge.Limit))
	if err := tasks.CheckTask("q", m, 8<<20); err != nil {
		t.Fatalf("CheckTask with headers at the limit it gave: %v", err)
	}
}

// The largest task the README and Enqueue's doc give: queue "render", a
// 36-byte id, no headers of the task's own, the default max_payload.
func TestLargestTaskAsDocumented(t *testing.T) {
	t.Parallel()
	const id, largest = "0f8fad5b-d9cb-469f-a165-70867728950e", 1_047_199
	if err := tasks.CheckTask("render", taskMsg(id, make([]byte, largest)), 1<<20); err != nil {
		t.Fatalf("CheckTask of %d bytes: %v", largest, err)
	}
	err := tasks.CheckTask("render", taskMsg(id, make([]byte, largest+1)), 1<<20)
	if want := "the server's max_payload is 1048576"; !errors.Is(err, tasks.ErrTaskTooLarge) || !strings.Contains(err.Error(), want) {
		t.Fatalf("CheckTask of %d bytes: %v, want ErrTaskTooLarge saying %q", largest+1, err, want)
	}
}
