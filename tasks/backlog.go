package tasks

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/corral-go/corral/internal/jsapi"
)

// Backlog is what waits in a queue, read cheaply enough to be read at
// every scrape of its metrics: a few requests, whatever the queue holds.
type Backlog struct {
	// Waiting and Taken are as in Counts.
	Waiting map[string]uint64
	Taken   uint64
	// Oldest is when the oldest task still waiting was stored; zero when
	// none waits. A task taken and not yet claimed counts as waiting.
	Oldest time.Time
	// DeadLettered is as in Counts.
	DeadLettered uint64
	// PausedUntil is as in Counts.
	PausedUntil time.Time
}

// WaitingTotal is the tasks waiting in every slot, taken ones aside.
func (b Backlog) WaitingTotal() uint64 { return Counts{Waiting: b.Waiting}.WaitingTotal() }

// Backlog reads what waits in the queue: the slots' consumers, the first
// copy waiting, and the dead letters' count. Unlike Counts it reads no
// held record: it costs the same for a queue of ten tasks or a million.
func (q *Queue) Backlog(ctx context.Context) (Backlog, error) {
	js, err := q.js(ctx)
	if err != nil {
		return Backlog{}, err
	}
	b := Backlog{Waiting: map[string]uint64{}}
	for s, name := range slotConsumers {
		// Asked again while a cluster leaves it unanswered (electing).
		cons, err := jsapi.Ask(ctx, func(ctx context.Context) (jetstream.Consumer, error) {
			return js.Consumer(ctx, q.cfg.Stream, name)
		})
		if errors.Is(err, jetstream.ErrConsumerNotFound) {
			if b.Waiting[name], err = q.countSlot(ctx, js, slot(s)); err != nil {
				return Backlog{}, err
			}
			continue
		}
		if err != nil {
			return Backlog{}, fmt.Errorf("tasks: backlog of %s: %w", name, err)
		}
		info := cons.CachedInfo()
		b.Waiting[name], b.Taken = info.NumPending, b.Taken+uint64(info.NumAckPending)
		if until := jsapi.PausedUntil(info.Config); until != nil {
			b.PausedUntil = *until
		}
	}
	s, err := js.Stream(ctx, q.cfg.Stream)
	if err != nil {
		return Backlog{}, err
	}
	// The oldest copy is the first on a waiting subject: one request per
	// subject.
	m, err := nextOf(ctx, s, q.waitingCursors(), 1)
	if err != nil {
		return Backlog{}, err
	}
	if m != nil {
		b.Oldest = m.Time
	}
	if q.cfg.DeadLetter != "" {
		if b.DeadLettered, err = q.countDeadLetters(ctx, js); err != nil {
			return Backlog{}, err
		}
	}
	return b, nil
}
