package tasks

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// Pause stops every worker of the queue from taking tasks until until,
// or until Resume: the server holds the queue's consumers (a consumer
// pause, nats-server 2.11 or later), so no copy is delivered meanwhile,
// whoever asks. Tasks already taken go on: those running, and those a
// worker holds before their claim or took ahead, which start as their
// slots free. Workers that start meanwhile keep the pause, and Pause
// before any worker has run declares the queue's consumers paused. A
// pause again moves the time; it is idempotent.
func (q *Queue) Pause(ctx context.Context, until time.Time) error {
	if !until.After(time.Now()) {
		return fmt.Errorf("tasks: pause queue %s until %v: a time to come", q.look.names.queue, until)
	}
	js, err := q.js(ctx)
	if err != nil {
		return err
	}
	declared := false
	for _, name := range slotConsumers {
		_, err := js.PauseConsumer(ctx, q.cfg.Stream, name, until)
		if errors.Is(err, jetstream.ErrConsumerNotFound) && !declared {
			// No worker has declared the queue: its consumers are made
			// paused (those already there are paused here).
			if err := declareConsumers(ctx, js, q.look.names.queue, q.cfg, &until); err != nil {
				return fmt.Errorf("tasks: pause queue %s: %w", q.look.names.queue, err)
			}
			declared = true
			_, err = js.PauseConsumer(ctx, q.cfg.Stream, name, until)
		}
		if err != nil {
			return fmt.Errorf("tasks: pause queue %s: %w", q.look.names.queue, err)
		}
	}
	return nil
}

// Resume lets the queue's workers take tasks again, at once; a queue not
// paused is left as it is.
func (q *Queue) Resume(ctx context.Context) error {
	js, err := q.js(ctx)
	if err != nil {
		return err
	}
	for _, name := range slotConsumers {
		_, err := js.ResumeConsumer(ctx, q.cfg.Stream, name)
		if err != nil && !errors.Is(err, jetstream.ErrConsumerNotFound) {
			return fmt.Errorf("tasks: resume queue %s: %w", q.look.names.queue, err)
		}
	}
	return nil
}
