package chaos

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/corral-go/corral/consumer"
	"github.com/corral-go/corral/kv"
	"github.com/corral-go/corral/publisher"
	"github.com/corral-go/corral/supervisor"
	"github.com/corral-go/corral/tasks"
)

// Fault is one thing the nemesis does: Do injects it, holds it and heals
// it, returning once it is healed. Faults run one at a time.
type Fault struct {
	Name string
	Do   func() error
	// Effect is what the fault must do to the applications' connections,
	// checked after it healed, so that a fault which did not happen cannot
	// pass for one the workload survived.
	Effect Effect
}

// Effect is a fault's required effect on the applications' connections.
type Effect int

const (
	// Unchecked faults may or may not break connections.
	Unchecked Effect = iota
	// Breaks means some application's connection was dropped or replaced.
	Breaks
	// Keeps means no application's connection was dropped or replaced.
	Keeps
)

// Recovery is how long after a fault healed the workload first had a
// message acknowledged and one processed.
type Recovery struct {
	Fault          string
	Ack, Processed time.Duration
}

// Schedule runs faults, in order and then in a random order, until
// duration has passed (at least each once), waiting after each until the
// workload acknowledges and processes orders again. It returns the
// recoveries and stops at the first fault that cannot be done or healed,
// or that did not have its Effect.
func (w *Workload) Schedule(faults []Fault, duration, gap time.Duration, logf func(string, ...any)) ([]Recovery, error) {
	var out []Recovery
	end := time.Now().Add(duration)
	order := faults
	for i := 0; i < len(faults) || time.Now().Before(end); i++ {
		if i > 0 && i%len(faults) == 0 {
			order = append([]Fault(nil), faults...)
			rand.Shuffle(len(order), func(a, b int) { order[a], order[b] = order[b], order[a] })
		}
		f := order[i%len(faults)]
		start, before := time.Now(), w.disruptions()
		if err := f.Do(); err != nil {
			return out, fmt.Errorf("fault %s: %w", f.Name, err)
		}
		healed := time.Now()
		r, err := awaitRecovery(w.ledger, f.Name, healed, 60*time.Second)
		if err != nil {
			return out, err
		}
		switch after := w.disruptions(); {
		case f.Effect == Breaks && after == before:
			return out, fmt.Errorf("fault %s broke no connection", f.Name)
		case f.Effect == Keeps && after != before:
			return out, fmt.Errorf("fault %s dropped or replaced a connection (%d times)", f.Name, after-before)
		}
		logf("fault %-16s held %v, first ack %v and first processed %v after healing",
			f.Name, healed.Sub(start).Round(time.Millisecond), r.Ack.Round(time.Millisecond), r.Processed.Round(time.Millisecond))
		out = append(out, r)
		time.Sleep(gap) // the workload runs unharmed between faults
	}
	return out, nil
}

// awaitRecovery waits until the ledger shows an ack and a processed message
// after healed, for at most limit.
func awaitRecovery(l *Ledger, name string, healed time.Time, limit time.Duration) (Recovery, error) {
	r := Recovery{Fault: name}
	deadline := time.Now().Add(limit)
	for {
		ack, processed := l.Progress()
		if r.Ack == 0 && ack.After(healed) {
			r.Ack = ack.Sub(healed)
		}
		if r.Processed == 0 && processed.After(healed) {
			r.Processed = processed.Sub(healed)
		}
		if r.Ack > 0 && r.Processed > 0 {
			return r, nil
		}
		if time.Now().After(deadline) {
			return r, fmt.Errorf("fault %s: no progress %v after healing (ack after %v, processed after %v)", name, limit, r.Ack, r.Processed)
		}
		time.Sleep(5 * time.Millisecond) // measuring: the resolution of the recovery figures
	}
}

// hold waits d: how long a fault lasts.
func hold(d time.Duration) { time.Sleep(d) }

// PanicFault makes handlers panic on a quarter of first deliveries for d.
func (w *Workload) PanicFault(d time.Duration) Fault {
	return Fault{Name: "handler-panics", Effect: Keeps, Do: func() error {
		before := w.injected.Load()
		w.panics.Store(true)
		hold(d)
		w.panics.Store(false)
		if w.injected.Load() == before {
			return errors.New("no handler panicked")
		}
		return nil
	}}
}

// WorkerKillFault kills worker app name (its path cut first where the
// topology can, so that it cannot say goodbye) and starts a new one in
// its place after down.
func (w *Workload) WorkerKillFault(name string, down time.Duration) Fault {
	return Fault{Name: "worker-kill", Effect: Unchecked, Do: func() error {
		w.mu.Lock()
		old := w.workers[name]
		w.mu.Unlock()
		w.topo.cut(name, true)
		_ = old.stop() // cut off, it cannot finish its stop cleanly
		w.topo.cut(name, false)
		hold(down)
		a, err := w.newWorker(name)
		if err != nil {
			return err
		}
		w.mu.Lock()
		w.workers[name] = a
		w.mu.Unlock()
		return nil
	}}
}

// WorkerPauseFault pauses worker app name past its task lease (2s) for
// down, with pull requests out. The workers run in this process, so the
// pause is of its paths (a blackhole): the server sees what a SIGSTOPped
// process shows it, a connection kept open, its pull requests with it,
// and nothing read or renewed. The worker's tasks go to the other worker;
// none may reach the paused one's requests and wait there. The fault
// fails unless the worker had room to ask for more (requests out) when
// paused, and lost its lease.
func (w *Workload) WorkerPauseFault(name string, down time.Duration) Fault {
	return Fault{Name: "worker-pause", Effect: Unchecked, Do: func() error {
		w.mu.Lock()
		a := w.workers[name]
		w.mu.Unlock()
		worker, ok := a.client.Worker(taskQueue)
		if !ok {
			return fmt.Errorf("worker %s serves no queue %s", name, taskQueue)
		}
		// A fault before may have cost it its lease: it takes a new one.
		before, deadline := worker.Status(), time.Now().Add(30*time.Second)
		for ; before.Lease != tasks.LeaseStateHeld || before.Held > before.Capacity/2; before = worker.Status() {
			if time.Now().After(deadline) {
				return fmt.Errorf("worker %s is not taking tasks with room to spare: %+v", name, before)
			}
			time.Sleep(50 * time.Millisecond) // polling its status, which nothing here announces
		}
		w.topo.pause(name, true)
		hold(down)
		w.topo.pause(name, false)
		if after := worker.Status(); after.Counters.LeasesLost == before.Counters.LeasesLost {
			return fmt.Errorf("worker %s was paused %v and kept its lease", name, down)
		}
		return nil
	}}
}

// ConsumerDeleteFault deletes the orders handler's durable consumer
// behind Corral's back.
func ConsumerDeleteFault(js jetstream.JetStream) Fault {
	return Fault{Name: "consumer-delete", Effect: Keeps, Do: func() error {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		return js.DeleteConsumer(ctx, ordersStream, ordersHandler)
	}}
}

// BadMessageFault gives the Client what the server cannot take (a
// subject or key past its control line, an unencodable header name) on
// every path: each must be refused where it is given, a finding
// otherwise, and no connection harmed (Keeps).
func (w *Workload) BadMessageFault() Fault {
	return Fault{Name: "bad-message", Effect: Keeps, Do: func() error {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		c := w.pub.client
		long := ordersSubject + "." + strings.Repeat("x", 8<<10)
		refused := func(what string, err, want error) {
			if !errors.Is(err, want) {
				w.ledger.Finding("%s: %v, want %v", what, err, want)
			}
		}
		_, err := c.Publish(ctx, long, []byte("bad"))
		refused("Publish of an 8KiB subject", err, publisher.ErrSubjectTooLong)
		refused("PublishCore of an 8KiB subject", c.PublishCore(ctx, long, []byte("bad")), publisher.ErrSubjectTooLong)
		_, err = c.Request(ctx, long, []byte("bad"))
		refused("Request of an 8KiB subject", err, publisher.ErrSubjectTooLong)
		bad := &nats.Msg{Subject: ordersSubject + ".bad", Data: []byte("bad"), Header: nats.Header{"Bad Name:": {"x"}}}
		_, err = c.PublishMsg(ctx, bad)
		refused("PublishMsg with a header named \"Bad Name:\"", err, publisher.ErrBadHeader)
		results, err := c.KV(resultsBucket)
		if err != nil {
			return err
		}
		_, err = results.Put(ctx, strings.Repeat("k", 8<<10), []byte("bad"))
		refused("Put of an 8KiB key", err, kv.ErrInvalidKey)
		err = c.Handle("bad-subject", consumer.Config{Subject: long}, consumer.HandlerFunc(func(context.Context, *consumer.Msg) error { return nil }))
		refused("Handle of an 8KiB subject", err, supervisor.ErrInvalidConfig)
		return nil
	}}
}
