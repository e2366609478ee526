package main

import (
	"context"
	"errors"
	"fmt"
	"time"
	"unicode/utf8"

	"github.com/corral-go/corral/connection"
	"github.com/corral-go/corral/inspector"
	"github.com/corral-go/corral/tasks"
)

// openQueue connects and finds the queue name on the server; deadLetter,
// if set, is its DeadLetter subject. The returned close ends the
// connection.
func (c *cli) openQueue(ctx context.Context, name, deadLetter string) (*tasks.Queue, func(), error) {
	nc, err := c.connect()
	if err != nil {
		return nil, nil, err
	}
	in := inspector.New(connection.NewFixed(nc), nil, inspector.WithJetStreamAPI(c.api))
	found, err := in.Queues(ctx)
	if err != nil {
		nc.Close()
		return nil, nil, fmt.Errorf("list the task queues: %w", err)
	}
	for _, ref := range found {
		if ref.Name == name {
			cfg := ref.Config()
			cfg.DeadLetter = deadLetter
			return tasks.NewQueue(ref.Name, cfg, connection.NewFixed(nc)), nc.Close, nil
		}
	}
	nc.Close()
	return nil, nil, fmt.Errorf("no task queue %q on the server (corral queues lists them)", name)
}

// onQueue runs fn on the queue name within the command's timeout;
// deadLetter, if set, is its DeadLetter subject.
func (c *cli) onQueue(ctx context.Context, name, deadLetter string, fn func(context.Context, *tasks.Queue) error) error {
	ctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	q, done, err := c.openQueue(ctx, name, deadLetter)
	if err != nil {
		return err
	}
	defer done()
	return fn(ctx, q)
}

// queueRow is a row of queues.
type queueRow struct {
	Queue   string       `json:"queue"`
	Stream  string       `json:"stream"`
	Subject string       `json:"subject"`
	Counts  tasks.Counts `json:"counts"`
	Workers int          `json:"workers"`
}

func runQueues(ctx context.Context, c *cli, args []string) error {
	fs := c.flags("queues")
	if _, err := parse(fs, args, 0, 0); err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	nc, err := c.connect()
	if err != nil {
		return err
	}
	defer nc.Close()
	found, err := inspector.New(connection.NewFixed(nc), nil, inspector.WithJetStreamAPI(c.api)).Queues(ctx)
	if err != nil {
		return fmt.Errorf("list the task queues: %w", err)
	}
	rows := make([]queueRow, 0, len(found))
	for _, ref := range found {
		q := tasks.NewQueue(ref.Name, ref.Config(), connection.NewFixed(nc))
		counts, err := q.Counts(ctx)
		if err != nil {
			return fmt.Errorf("queue %s: %w", ref.Name, err)
		}
		workers, err := q.Workers(ctx)
		if err != nil {
			return fmt.Errorf("queue %s: %w", ref.Name, err)
		}
		rows = append(rows, queueRow{Queue: ref.Name, Stream: ref.Stream, Subject: ref.Subject, Counts: counts, Workers: len(workers)})
	}
	if c.json {
		return c.printJSON(rows)
	}
	t := newTable(c.out, "QUEUE", "WAITING", "TAKEN", "SCHEDULED", "RUNNING", "COMPLETED", "FAILED", "CANCELLED", "WORKERS", "PAUSED")
	for _, r := range rows {
		paused := ""
		if !r.Counts.PausedUntil.IsZero() {
			paused = "until " + r.Counts.PausedUntil.Local().Format(time.DateTime)
		}
		n := r.Counts
		t.row(r.Queue, n.WaitingTotal(), n.Taken, n.Scheduled, n.Running, n.Completed, n.Failed, n.Cancelled, r.Workers, paused)
	}
	return t.flush()
}

func runTasksList(ctx context.Context, c *cli, args []string) error {
	fs := c.flags("tasks ls")
	state := fs.String("state", string(tasks.StateWaiting), "waiting, scheduled, running, completed, failed or cancelled")
	limit := fs.Int("limit", tasks.DefaultPageSize, fmt.Sprintf("tasks in the page, at most %d", tasks.MaxPageSize))
	after := fs.Uint64("after", 0, "where the page begins: the cursor the page before printed")
	rest, err := parse(fs, args, 1, 1)
	if err != nil {
		return err
	}
	return c.onQueue(ctx, rest[0], "", func(ctx context.Context, q *tasks.Queue) error {
		page, err := q.List(ctx, tasks.ListOptions{State: tasks.State(*state), After: *after, Limit: *limit})
		if err != nil {
			return err
		}
		return c.printPage(page)
	})
}

func (c *cli) printPage(page tasks.Page) error {
	if c.json {
		return c.printJSON(page)
	}
	t := newTable(c.out, "ID", "STATE", "SINCE", "ATTEMPT", "FAILURES", "PROCESS", "AT", "PROGRESS", "ERROR")
	for _, i := range page.Tasks {
		at := ""
		if !i.At.IsZero() {
			at = i.At.Local().Format(time.DateTime)
		}
		t.row(i.ID, i.State, i.Since.Local().Format(time.DateTime), i.Attempt, i.Failures, i.Process, at, text(i.Progress, 30), i.Err)
	}
	if page.Next != 0 {
		t.footer(fmt.Sprintf("more: --after %d", page.Next))
	}
	return t.flush()
}

// text shows b as text, cut to n runes, or says how long it is.
func text(b []byte, n int) string {
	if !utf8.Valid(b) {
		return fmt.Sprintf("(%d bytes)", len(b))
	}
	if r := []rune(string(b)); len(r) > n {
		return string(r[:n]) + "…"
	}
	return string(b)
}

func runTasksShow(ctx context.Context, c *cli, args []string) error {
	fs := c.flags("tasks show")
	rest, err := parse(fs, args, 2, 2)
	if err != nil {
		return err
	}
	return c.onQueue(ctx, rest[0], "", func(ctx context.Context, q *tasks.Queue) error {
		i, err := q.Info(ctx, rest[1])
		if err != nil {
			return err
		}
		if c.json {
			return c.printJSON(i)
		}
		t := newTable(c.out, "FIELD", "VALUE")
		t.row("queue", i.Queue)
		t.row("id", i.ID)
		t.row("state", i.State)
		t.row("since", i.Since.Local().Format(time.RFC3339))
		if !i.At.IsZero() {
			t.row("at", i.At.Local().Format(time.RFC3339))
		}
		t.row("attempt", i.Attempt)
		t.row("failures", i.Failures)
		if i.Worker != "" {
			t.row("worker", i.Worker+" ("+i.Process+")")
		}
		if i.Progress != nil {
			t.row("progress", text(i.Progress, 200))
		}
		if i.Result != nil {
			t.row("result", text(i.Result, 200))
		}
		if i.Err != "" {
			t.row("error", i.Err)
		}
		return t.flush()
	})
}

func runTasksCancel(ctx context.Context, c *cli, args []string) error {
	fs := c.flags("tasks cancel")
	rest, err := parse(fs, args, 2, 2)
	if err != nil {
		return err
	}
	return c.onQueue(ctx, rest[0], "", func(ctx context.Context, q *tasks.Queue) error {
		was, err := q.Cancel(ctx, rest[1])
		if errors.Is(err, tasks.ErrFinished) {
			return fmt.Errorf("task %s had ended (%s): nothing to cancel", rest[1], was)
		}
		if err != nil {
			return err
		}
		if c.json {
			return c.printJSON(map[string]string{"id": rest[1], "was": string(was)})
		}
		_, err = fmt.Fprintf(c.out, "cancelled %s, which was %s\n", rest[1], was)
		return err
	})
}

func runTasksDelete(ctx context.Context, c *cli, args []string) error {
	fs := c.flags("tasks delete")
	rest, err := parse(fs, args, 2, 2)
	if err != nil {
		return err
	}
	return c.onQueue(ctx, rest[0], "", func(ctx context.Context, q *tasks.Queue) error {
		was, err := q.Delete(ctx, rest[1])
		if err != nil {
			return err
		}
		if c.json {
			return c.printJSON(map[string]string{"id": rest[1], "was": string(was)})
		}
		_, err = fmt.Fprintf(c.out, "deleted %s, which was %s\n", rest[1], was)
		return err
	})
}

func runTasksDead(ctx context.Context, c *cli, args []string) error {
	fs := c.flags("tasks dead")
	deadLetter := fs.String("dead-letter", "", "the queue's dead_letter subject")
	limit := fs.Int("limit", tasks.DefaultPageSize, fmt.Sprintf("dead letters in the page, at most %d", tasks.MaxPageSize))
	after := fs.Uint64("after", 0, "where the page begins: the cursor the page before printed")
	rest, err := parse(fs, args, 1, 1)
	if err != nil {
		return err
	}
	if *deadLetter == "" {
		return fmt.Errorf("%w: tasks dead needs --dead-letter, the queue's dead_letter subject", errUsage)
	}
	return c.onQueue(ctx, rest[0], *deadLetter, func(ctx context.Context, q *tasks.Queue) error {
		page, err := q.DeadLetters(ctx, tasks.ListOptions{After: *after, Limit: *limit})
		if err != nil {
			return err
		}
		return c.printPage(page)
	})
}

func runTasksRetry(ctx context.Context, c *cli, args []string) error {
	fs := c.flags("tasks retry")
	deadLetter := fs.String("dead-letter", "", "the queue's dead_letter subject")
	all := fs.Bool("all", false, "retry every dead letter of the queue")
	rest, err := parse(fs, args, 1, 2)
	switch {
	case err != nil:
		return err
	case *deadLetter == "":
		return fmt.Errorf("%w: tasks retry needs --dead-letter, the queue's dead_letter subject", errUsage)
	case *all == (len(rest) == 2):
		return fmt.Errorf("%w: tasks retry takes a task's id or --all", errUsage)
	}
	return c.onQueue(ctx, rest[0], *deadLetter, func(ctx context.Context, q *tasks.Queue) error {
		n := 1
		if *all {
			n, err = q.RetryAll(ctx, nil)
		} else {
			err = q.Retry(ctx, rest[1])
		}
		if err != nil {
			return err
		}
		if c.json {
			return c.printJSON(map[string]int{"retried": n})
		}
		_, err = fmt.Fprintf(c.out, "retried %d task(s)\n", n)
		return err
	})
}

func runPause(ctx context.Context, c *cli, args []string) error {
	fs := c.flags("pause")
	d := fs.Duration("for", time.Hour, "how long the queue stays paused")
	rest, err := parse(fs, args, 1, 1)
	if err != nil {
		return err
	}
	if *d <= 0 {
		return fmt.Errorf("%w: pause --for %v: a duration to come", errUsage, *d)
	}
	return c.onQueue(ctx, rest[0], "", func(ctx context.Context, q *tasks.Queue) error {
		until := time.Now().Add(*d)
		if err := q.Pause(ctx, until); err != nil {
			return err
		}
		if c.json {
			return c.printJSON(map[string]any{"queue": rest[0], "paused_until": until})
		}
		_, err = fmt.Fprintf(c.out, "queue %s paused until %s\n", rest[0], until.Local().Format(time.DateTime))
		return err
	})
}

func runResume(ctx context.Context, c *cli, args []string) error {
	fs := c.flags("resume")
	rest, err := parse(fs, args, 1, 1)
	if err != nil {
		return err
	}
	return c.onQueue(ctx, rest[0], "", func(ctx context.Context, q *tasks.Queue) error {
		if err := q.Resume(ctx); err != nil {
			return err
		}
		if c.json {
			return c.printJSON(map[string]string{"queue": rest[0], "state": "resumed"})
		}
		_, err = fmt.Fprintf(c.out, "queue %s resumed\n", rest[0])
		return err
	})
}
