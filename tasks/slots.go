package tasks

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/corral-go/corral/internal/jsapi"
)

// slot is where a copy of a task waits in the queue: one consumer each,
// pulled in strict order, so that a worker with room takes every task
// waiting in a slot before any in the next.
type slot int

const (
	// slotBack holds the tasks that come back: recovered from a dead or
	// cut-off worker, handed back, or retried after a failure. They run
	// before any new task.
	slotBack slot = iota
	slotHigh
	// slotNormal also takes the queue's Subject: tasks published there,
	// as Client.Enqueue does.
	slotNormal
	slotLow
	slots = iota
)

// slotConsumers names the consumer of each slot, as `nats consumer ls`
// shows them.
var slotConsumers = [slots]string{"back", "high", "normal", "low"}

// slotPurpose describes each slot's consumer in its configuration.
var slotPurpose = [slots]string{
	"tasks that come back (recovered, handed back, retried), taken before all others",
	"high-priority tasks",
	"tasks of normal priority, and those published on the queue's subject",
	"low-priority tasks, taken only when no other waits",
}

// consumerNames is the slots' consumers, in the order they are pulled.
func consumerNames() []string { return slotConsumers[:] }

// declareConsumers declares the consumer of each slot of queue, after
// deleting the one unfiltered consumer of the queue's previous layout:
// the server refuses filtered consumers of a work-queue stream beside it.
// What that consumer had delivered and not acked stays in the stream, and
// goes to the slots' consumers. A worker of the previous version then
// fails to declare it again, and takes nothing more from the queue. A
// consumer paused (Queue.Pause) stays paused: the server keeps a pause
// through updates. pauseUntil, if set, pauses the consumers made.
func declareConsumers(ctx context.Context, js jetstream.JetStream, queue string, c Config, pauseUntil *time.Time) error {
	_, err := jsapi.Ask(ctx, func(ctx context.Context) (struct{}, error) {
		return struct{}{}, js.DeleteConsumer(ctx, c.Stream, oldConsumerName)
	})
	if err != nil && !errors.Is(err, jetstream.ErrConsumerNotFound) {
		return fmt.Errorf("delete consumer %s of stream %s, of the queue's previous layout: %w", oldConsumerName, c.Stream, err)
	}
	for s := range slot(slots) {
		filters := []string{fmt.Sprintf(slotTmpl, queue, s)}
		if s == slotNormal {
			filters = append([]string{c.Subject}, filters...)
		}
		cc := jetstream.ConsumerConfig{Durable: slotConsumers[s], Description: "corral: queue " + queue + ": " + slotPurpose[s],
			FilterSubjects: filters, AckPolicy: jetstream.AckExplicitPolicy, AckWait: c.ClaimWait, MaxDeliver: -1,
			// Each worker takes only what it has room for, and what it
			// takes ahead: a limit across all of them would cap their sum,
			// not each, and would keep a probe of the slot waiting (see
			// pull.Config.Until).
			MaxAckPending: -1, PauseUntil: pauseUntil}
		if _, err := jsapi.Ask(ctx, func(ctx context.Context) (jetstream.Consumer, error) {
			return js.CreateOrUpdateConsumer(ctx, c.Stream, cc)
		}); err != nil {
			return fmt.Errorf("declare consumer %s of stream %s: %w", cc.Durable, c.Stream, err)
		}
	}
	return nil
}
