package tasks

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/corral-go/corral/internal/jsapi"
)

// Counts are how many tasks a queue holds in each state, as its streams
// say when they are read: one read of each slot's consumer, of the
// queue's schedules and of its held records, not a snapshot of one
// instant.
type Counts struct {
	// Waiting is the tasks waiting in each slot ("back", "high", "normal",
	// "low") that no worker has taken; Taken those delivered to a worker
	// and not yet claimed or settled: starting, running before their
	// claim (Config.ClaimAfter) or taken ahead (Config.Prefetch).
	Waiting map[string]uint64
	Taken   uint64
	// Scheduled is the tasks waiting for their time (EnqueueTask's At
	// and After, hand-backs and backoffs with a delay).
	Scheduled uint64
	// Running is the tasks held by a worker's record; Completed, Failed
	// and Cancelled those ended within KeepCompleted (KeepResults with a
	// result).
	Running, Completed, Failed, Cancelled uint64
	// DeadLettered is the messages on the queue's DeadLetter subject, in
	// the stream that stores it; 0 without one.
	DeadLettered uint64
	// PausedUntil is when a paused queue resumes (Queue.Pause); zero when
	// it is not paused.
	PausedUntil time.Time
}

// WaitingTotal is the tasks waiting in every slot, taken ones aside.
func (c Counts) WaitingTotal() uint64 {
	var n uint64
	for _, w := range c.Waiting {
		n += w
	}
	return n
}

// Counts counts the queue's tasks in each state.
func (q *Queue) Counts(ctx context.Context) (Counts, error) {
	js, err := q.js(ctx)
	if err != nil {
		return Counts{}, err
	}
	c := Counts{Waiting: map[string]uint64{}}
	for s, name := range slotConsumers {
		// Asked again while a cluster leaves it unanswered (electing).
		cons, err := jsapi.Ask(ctx, func(ctx context.Context) (jetstream.Consumer, error) {
			return js.Consumer(ctx, q.cfg.Stream, name)
		})
		if errors.Is(err, jetstream.ErrConsumerNotFound) {
			// No worker declared the queue yet: what the stream holds
			// waits.
			if c.Waiting[name], err = q.countSlot(ctx, js, slot(s)); err != nil {
				return Counts{}, err
			}
			continue
		}
		if err != nil {
			return Counts{}, fmt.Errorf("tasks: count %s: %w", name, err)
		}
		info := cons.CachedInfo()
		c.Waiting[name], c.Taken = info.NumPending, c.Taken+uint64(info.NumAckPending)
		if until := jsapi.PausedUntil(info.Config); until != nil {
			c.PausedUntil = *until
		}
	}
	if c.Scheduled, err = countSubject(ctx, js, q.cfg.Stream, q.look.names.scheduledAll()); err != nil {
		return Counts{}, err
	}
	held, err := q.look.heldStream(ctx, js)
	if err != nil {
		return Counts{}, err
	}
	if held != nil {
		words := lastWords{}
		err = scanStream(ctx, held, []string{q.look.names.heldAll()}, 1, true, func(m *jetstream.RawStreamMsg) error {
			words.add(parseRecord(m))
			return nil
		})
		if err != nil {
			return Counts{}, err
		}
		for _, w := range words {
			switch w.final() {
			case StateRunning:
				c.Running++
			case StateCompleted:
				c.Completed++
			case StateCancelled:
				c.Cancelled++
			default:
				c.Failed++
			}
		}
	}
	if q.cfg.DeadLetter != "" {
		if c.DeadLettered, err = q.countDeadLetters(ctx, js); err != nil {
			return Counts{}, err
		}
	}
	return c, nil
}

// lastWords are the held stream's last word on each task, as Info reads
// it (lookup.lastRecord), gathered in one pass: a task's newest record,
// tombstone or cancel marker, but for a run that still holds it behind a
// marker.
type lastWords map[string]*lastWord

type lastWord struct {
	seq    uint64
	state  string // the newest's
	marker bool
	live   bool // a record holds it: records are replaced by tombstones
}

func (l lastWords) add(rec record) {
	w := l[rec.id]
	if w == nil {
		w = &lastWord{}
		l[rec.id] = w
	}
	w.live = w.live || rec.state == stateHeld
	if rec.seq > w.seq {
		w.seq, w.state, w.marker = rec.seq, rec.state, rec.marker()
	}
}

func (w *lastWord) final() State {
	switch {
	case w.state == stateHeld, w.marker && w.live:
		return StateRunning
	case w.state == stateDone:
		return StateCompleted
	case w.state == stateCancelled:
		return StateCancelled
	}
	return StateFailed
}

// countSlot counts the copies the queue's stream holds for slot s.
func (q *Queue) countSlot(ctx context.Context, js jetstream.JetStream, s slot) (uint64, error) {
	n, err := countSubject(ctx, js, q.cfg.Stream, fmt.Sprintf(slotTmpl, q.look.names.queue, s))
	if err != nil || s != slotNormal {
		return n, err
	}
	m, err := countSubject(ctx, js, q.cfg.Stream, q.cfg.Subject)
	return n + m, err
}

// countDeadLetters counts the messages on the queue's DeadLetter subject
// in the stream that stores it.
func (q *Queue) countDeadLetters(ctx context.Context, js jetstream.JetStream) (uint64, error) {
	dl, err := q.deadLetterStream(ctx, js)
	if err != nil || dl == nil {
		return 0, err
	}
	return countSubject(ctx, js, dl.CachedInfo().Config.Name, q.cfg.DeadLetter)
}

// countSubject counts the messages of stream on subject (a wildcard).
func countSubject(ctx context.Context, js jetstream.JetStream, stream, subject string) (uint64, error) {
	s, err := js.Stream(ctx, stream)
	if err != nil {
		return 0, fmt.Errorf("tasks: count %s: %w", subject, err)
	}
	info, err := s.Info(ctx, jetstream.WithSubjectFilter(subject))
	if err != nil {
		return 0, fmt.Errorf("tasks: count %s: %w", subject, err)
	}
	var n uint64
	for _, c := range info.State.Subjects {
		n += c
	}
	return n, nil
}

// WorkerInfo is a worker of a queue as its lease and the records it holds
// say.
type WorkerInfo struct {
	// Worker is its lease's identity, Process its Config.Process.
	Worker, Process string
	// Renewed is when the server stored its lease's last renewal.
	Renewed time.Time
	// Held counts the tasks its records hold: claimed, not those it runs
	// before their claim or took ahead.
	Held int
	// Recoverer is true for the worker elected to recover dead workers'
	// tasks, as far as the lease bucket tells: the recoverer's lock names
	// its process, so every worker of that process is marked.
	Recoverer bool
}

// Workers returns the queue's workers that hold a lease now, by process
// and identity.
func (q *Queue) Workers(ctx context.Context) ([]WorkerInfo, error) {
	js, err := q.js(ctx)
	if err != nil {
		return nil, err
	}
	bucket, err := js.KeyValue(ctx, q.look.names.leaseBucket)
	if errors.Is(err, jetstream.ErrBucketNotFound) {
		return nil, nil // no worker ever ran
	}
	if err != nil {
		return nil, err
	}
	lister, err := bucket.ListKeys(ctx)
	if err != nil && !errors.Is(err, jetstream.ErrNoKeysFound) {
		return nil, err
	}
	var out []WorkerInfo
	recoverer := ""
	if lister != nil {
		for key := range lister.Keys() {
			e, err := bucket.Get(ctx, key)
			if err != nil {
				continue // expired meanwhile
			}
			// A lock's value is its lease's own id, then what it names.
			_, process, _ := strings.Cut(string(e.Value()), " ")
			switch {
			case key == recovererKey:
				recoverer = process
			case strings.HasPrefix(key, leaseKey("")):
				out = append(out, WorkerInfo{Worker: strings.TrimPrefix(key, leaseKey("")), Process: process, Renewed: e.Created()})
			}
		}
	}
	held, err := q.look.heldStream(ctx, js)
	if err != nil {
		return nil, err
	}
	counts := map[string]int{}
	if held != nil {
		err = scanStream(ctx, held, []string{q.look.names.heldAll()}, 1, true, func(m *jetstream.RawStreamMsg) error {
			if rec := parseRecord(m); rec.state == stateHeld {
				counts[rec.worker]++
			}
			return nil
		})
		if err != nil {
			return nil, err
		}
	}
	for i := range out {
		out[i].Held = counts[out[i].Worker]
		out[i].Recoverer = recoverer != "" && out[i].Process == recoverer
	}
	slices.SortFunc(out, func(a, b WorkerInfo) int {
		return strings.Compare(a.Process+"\x00"+a.Worker, b.Process+"\x00"+b.Worker)
	})
	return out, nil
}
