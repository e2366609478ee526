// Package inspector is one place to see and steer a Corral fleet over NATS,
// from any process with a connection: the fleet's processes and their
// status (package fleet), its task queues (package tasks: counts, pages of
// tasks, workers, cancel, dead letters, pause), and its JetStream
// handlers' consumers (pause and resume). It needs no database and no
// server of its own: the state is in NATS. A corral.Client gives one
// (Client.Inspector) that knows its queues' configurations; the corral
// command uses one too.
package inspector

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/corral-go/corral/connection"
	"github.com/corral-go/corral/fleet"
	"github.com/corral-go/corral/tasks"
)

// Inspector sees and steers a fleet on the connections of a source. It is
// safe for concurrent use.
type Inspector struct {
	src    connection.Source
	queues map[string]tasks.Config
	api    connection.JetStreamAPI
}

// Option configures an Inspector.
type Option func(*Inspector)

// WithJetStreamAPI makes the Inspector look for queues and consumers in
// api (a domain's JetStream, or an imported one) rather than the
// account's own. A queue of New's queues keeps its own.
func WithJetStreamAPI(api connection.JetStreamAPI) Option {
	return func(in *Inspector) { in.api = api }
}

// New returns an Inspector on the connections of src. queues, if given,
// are the configurations of queues it knows, which tell their dead-letter
// subjects and JetStream; other queues are found on the server
// (tasks.FindQueues).
func New(src connection.Source, queues map[string]tasks.Config, opts ...Option) *Inspector {
	in := &Inspector{src: src, queues: queues}
	for _, o := range opts {
		o(in)
	}
	return in
}

// Ping asks the processes q names who they are (fleet.Ping).
func (in *Inspector) Ping(ctx context.Context, q fleet.Query) ([]fleet.Instance, error) {
	nc, _, err := in.src.Conn(ctx)
	if err != nil {
		return nil, err
	}
	return fleet.Ping(ctx, nc, q)
}

// Status asks the processes q names for their status (fleet.Status).
func (in *Inspector) Status(ctx context.Context, q fleet.Query) ([]fleet.Instance, error) {
	nc, _, err := in.src.Conn(ctx)
	if err != nil {
		return nil, err
	}
	return fleet.Status(ctx, nc, q)
}

// Queues returns the task queues the server holds, in the Inspector's
// JetStream (WithJetStreamAPI), which their Config carries.
func (in *Inspector) Queues(ctx context.Context) ([]tasks.QueueRef, error) {
	js, err := in.js(ctx)
	if err != nil {
		return nil, err
	}
	found, err := tasks.FindQueues(ctx, js)
	for i := range found {
		found[i].JetStreamAPI = in.api
	}
	return found, err
}

// Queue returns the task queue name: as configured, when the Inspector
// knows its configuration, or as found on the server. It fails when the
// server holds no such queue.
func (in *Inspector) Queue(ctx context.Context, name string) (*tasks.Queue, error) {
	if cfg, ok := in.queues[name]; ok {
		return tasks.NewQueue(name, cfg, in.src), nil
	}
	found, err := in.Queues(ctx)
	if err != nil {
		return nil, err
	}
	for _, ref := range found {
		if ref.Name == name {
			return tasks.NewQueue(name, ref.Config(), in.src), nil
		}
	}
	return nil, fmt.Errorf("inspector: no task queue %q on the server", name)
}

// PauseHandler pauses the JetStream handler handler of the service
// service until until: its consumer delivers nothing to any of the
// service's instances meanwhile (a consumer pause, nats-server 2.11+),
// and a handler that restarts keeps the pause. The instances that answer
// within fleet.DefaultWait say which consumer is the handler's.
func (in *Inspector) PauseHandler(ctx context.Context, service, handler string, until time.Time) error {
	h, err := in.handlerConsumer(ctx, service, handler)
	if err != nil {
		return err
	}
	return in.on(h.JetStreamAPI).PauseConsumer(ctx, h.Stream, h.Consumer, until)
}

// ResumeHandler resumes the JetStream handler handler of service.
func (in *Inspector) ResumeHandler(ctx context.Context, service, handler string) error {
	h, err := in.handlerConsumer(ctx, service, handler)
	if err != nil {
		return err
	}
	return in.on(h.JetStreamAPI).ResumeConsumer(ctx, h.Stream, h.Consumer)
}

// PauseConsumer pauses consumer of stream until until.
func (in *Inspector) PauseConsumer(ctx context.Context, stream, consumer string, until time.Time) error {
	if !until.After(time.Now()) {
		return fmt.Errorf("inspector: pause %s > %s until %v: a time to come", stream, consumer, until)
	}
	js, err := in.js(ctx)
	if err != nil {
		return err
	}
	if _, err := js.PauseConsumer(ctx, stream, consumer, until); err != nil {
		return fmt.Errorf("inspector: pause %s > %s: %w", stream, consumer, err)
	}
	return nil
}

// ResumeConsumer resumes consumer of stream, at once.
func (in *Inspector) ResumeConsumer(ctx context.Context, stream, consumer string) error {
	js, err := in.js(ctx)
	if err != nil {
		return err
	}
	if _, err := js.ResumeConsumer(ctx, stream, consumer); err != nil {
		return fmt.Errorf("inspector: resume %s > %s: %w", stream, consumer, err)
	}
	return nil
}

// handlerRef is what an instance's status says of a JetStream handler:
// its consumer, and the JetStream it is in.
type handlerRef struct {
	Name, Stream, Consumer string
	JetStreamAPI           connection.JetStreamAPI
}

// on is the Inspector reaching api instead of its own JetStream, when
// api names one (a handler in another domain).
func (in *Inspector) on(api connection.JetStreamAPI) *Inspector {
	if api.IsZero() {
		return in
	}
	other := *in
	other.api = api
	return &other
}

// handlerConsumer finds service's JetStream handler handler in the
// status its instances give.
func (in *Inspector) handlerConsumer(ctx context.Context, service, handler string) (handlerRef, error) {
	found, err := in.Status(ctx, fleet.Query{Name: service})
	if err != nil {
		return handlerRef{}, err
	}
	for _, inst := range found {
		var st struct{ Handlers []handlerRef }
		if json.Unmarshal(inst.Status, &st) != nil {
			continue
		}
		for _, h := range st.Handlers {
			if h.Name == handler && h.Stream != "" {
				return h, nil
			}
		}
	}
	return handlerRef{}, fmt.Errorf("inspector: no instance of %q that answered has a JetStream handler %q", service, handler)
}

func (in *Inspector) js(ctx context.Context) (jetstream.JetStream, error) {
	nc, _, err := in.src.Conn(ctx)
	if err != nil {
		return nil, err
	}
	return in.api.New(nc)
}

// Worker is a worker of a task queue, as its lease and records say and as
// its process answered: the lease's identity, its process, when its lease
// was last renewed, and, from the process's status, its lease's state,
// the tasks it holds (running, or taken and about to run) and its
// capacity. A worker whose process did not answer has only what the
// queue's streams say: Answered is false.
type Worker struct {
	tasks.WorkerInfo
	Answered bool
	Lease    tasks.LeaseState
	// Holds counts the tasks the worker holds now, claimed or not, as its
	// process says (WorkerInfo.Held counts its records alone).
	Holds, Capacity int
}

// Workers returns the workers of the task queue name that hold a lease,
// with what their processes answer within fleet.DefaultWait.
func (in *Inspector) Workers(ctx context.Context, name string) ([]Worker, error) {
	q, err := in.Queue(ctx, name)
	if err != nil {
		return nil, err
	}
	leases, err := q.Workers(ctx)
	if err != nil {
		return nil, err
	}
	found, err := in.Status(ctx, fleet.Query{})
	if err != nil {
		return nil, err
	}
	type status struct {
		Tasks []tasks.Status
	}
	byWorker := map[string]tasks.Status{}
	for _, inst := range found {
		var st status
		if json.Unmarshal(inst.Status, &st) != nil {
			continue
		}
		for _, t := range st.Tasks {
			if t.Queue == name && t.Worker != "" {
				byWorker[t.Worker] = t
			}
		}
	}
	out := make([]Worker, len(leases))
	for i, l := range leases {
		out[i] = Worker{WorkerInfo: l}
		if st, ok := byWorker[l.Worker]; ok {
			out[i].Answered, out[i].Lease, out[i].Holds, out[i].Capacity = true, st.Lease, st.Held, st.Capacity
		}
	}
	return out, nil
}
