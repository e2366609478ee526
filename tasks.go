package corral

import (
	"context"
	"fmt"
	"maps"
	"slices"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/nats-io/nuid"

	"github.com/corral-go/corral/inspector"
	"github.com/corral-go/corral/internal/conf"
	"github.com/corral-go/corral/publisher"
	"github.com/corral-go/corral/stream"
	"github.com/corral-go/corral/tasks"
)

// HandleTasks declares this process's worker for the task queue named
// queue, running h on the queue's tasks: as many at once as MaxConcurrency
// allows, each claimed once and kept alive by the worker's single lease.
// Its settings are cfg, declared in code, overridden by
// Config.Tasks[queue] as Handle's are. A worker given no process name
// goes by "<name>@<host>/<pid>", name being Config.Name (see
// tasks.DefaultProcess). The worker is a child of the tasks group, with
// its own restart policy. Declare workers before Run.
func (c *Client) HandleTasks(queue string, cfg tasks.Config, h tasks.Handler) error {
	if file, ok := c.cfg.Tasks[queue]; ok {
		conf.Override(&cfg, file, c.cfg.keys, "tasks."+queue)
	}
	if cfg.Process == "" {
		cfg.Process = tasks.DefaultProcess(c.cfg.Name)
	}
	cfg.Restart = cfg.Restart.Inherit(c.cfg.Restart)
	cfg.Events = c.events
	cfg.JetStreamAPI = cfg.JetStreamAPI.Or(c.cfg.JetStreamAPI)
	p := conf.NewProblems("tasks." + queue)
	if dl, sc, ok := storing(c.streams, cfg.DeadLetter); ok && c.inAPI(p, "jetstream", dl, "its dead-letter", cfg.JetStreamAPI) {
		cfg.DeadLetterStream, cfg.CreateDeadLetterStream = dl, &sc
	}
	queueStream, _ := cfg.QueueStream(queue)
	c.inAPI(p, "jetstream", queueStream, "its queue's", cfg.JetStreamAPI)
	if err := p.Err(); err != nil {
		return err
	}
	if c.tracer != nil {
		h = c.tracer.Tasks(queue, cfg, h)
	}
	w, err := tasks.New(queue, cfg, c.conn, h)
	if err != nil {
		return err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.serving {
		return fmt.Errorf("corral: task queue %q: %w: declare workers before Run", queue, ErrRunning)
	}
	if _, dup := c.workers[queue]; dup {
		return fmt.Errorf("%w: %q", ErrDuplicateWorker, queue)
	}
	if err := c.tasks.Add(w.String(), w, w.Config().Restart); err != nil {
		return fmt.Errorf("corral: task queue %q: %w", queue, err)
	}
	c.workers[queue] = w
	return nil
}

// Enqueue adds a task with data to queue, through the buffered publisher:
// it returns once the task is buffered, with the Future of the queue
// stream's ack; once acked, the task is stored and will run. The task's
// id is its Nats-Msg-Id (publisher.WithMsgID sets it; without one the
// task is given a NUID): the same id enqueued again within the queue's
// keep_completed is stored once, and every run sees it as Task.ID.
//
// Enqueue refuses at once, with tasks.CheckTask's errors, what the queue
// could not carry through its claim, put-back and dead letter: an id
// longer than tasks.MaxIDLen, not UTF-8 text, with a control character or
// white space at either end (tasks.ErrInvalidTaskID), or beginning, as
// the server stores it, with tasks.ReservedMsgIDPrefix
// (tasks.ErrReservedMsgID); a header beginning Corral-Task- or
// Nats-Schedule (tasks.ErrReservedHeader); and a task larger than the queue takes, a
// *tasks.TooLargeError that says the limit: the server's max_payload
// less what the queue's writes add to the task's headers (with the
// default 1 MiB, a queue takes 1,047,199 bytes of data under a 36-byte id
// and no headers of the task's own), or headers past the 65535 bytes a
// stream stores.
//
// The queue must be declared in Config.Tasks, so that its stream exists
// before any worker runs (the publisher declares it, when the queue is in
// the publisher's JetStream; one in another waits for its workers); its subject is this process's worker's, if
// HandleTasks declared one, else the file's. The stream allows message
// schedules, which need nats-server 2.12 or later: on an older server
// the publisher's declaration fails with stream.ErrSchedulesUnsupported.
func (c *Client) Enqueue(ctx context.Context, queue string, data []byte, opts ...publisher.Option) (*publisher.Future, error) {
	cfg, err := c.queueConfig(queue)
	if err != nil {
		return nil, err
	}
	_, sc := cfg.QueueStream(queue)
	m := &nats.Msg{Subject: sc.Subjects[0], Data: data, Header: nats.Header{}}
	// The id is the publisher's own when the caller gives none: given
	// here, it is checked and measured as it is sent.
	m.Header.Set(jetstream.MsgIDHeader, nuid.Next())
	for _, o := range opts {
		o(m.Header)
	}
	return c.traceEnqueue(ctx, queue, m.Subject, len(data), m.Header, func(ctx context.Context) (*publisher.Future, error) {
		if err := tasks.CheckTask(queue, m, c.pub.MaxPayload()); err != nil {
			return nil, fmt.Errorf("corral: task queue %q: %w", queue, err)
		}
		return c.pub.PublishMsg(ctx, m)
	})
}

// EnqueueTask adds a task with data to queue as Enqueue does, with
// options of the task queue's own: an id kept exactly as given
// (tasks.WithID; a NUID without it), a time to wait for (tasks.At,
// tasks.After), a priority (tasks.WithPriority) and headers
// (tasks.WithHeader). A task to run later waits in the queue's stream as
// a message schedule, which the server itself turns into a waiting task
// at its time: no process of ours keeps the time, and it survives server
// restarts and leader changes. It refuses what Enqueue refuses, and an
// unknown priority.
//
// It returns once the task is buffered; the Enqueued's Wait says whether
// it was enqueued, or is a duplicate: a task with its id waits, is
// scheduled, runs, or completed within keep_completed (a
// *tasks.DuplicateError that says which). A task that failed for good is
// no duplicate: enqueued again under its id, it runs again.
func (c *Client) EnqueueTask(ctx context.Context, queue string, data []byte, opts ...tasks.Option) (*tasks.Enqueued, error) {
	cfg, err := c.queueConfig(queue)
	if err != nil {
		return nil, err
	}
	trace := nats.Header{}
	var m *nats.Msg
	f, err := c.traceEnqueue(ctx, queue, "corral.tasks."+queue+".t.>", len(data), trace, func(ctx context.Context) (*publisher.Future, error) {
		if m, err = tasks.NewMessage(queue, data, c.pub.MaxPayload(), append(opts, tasks.WithHeader(trace))...); err != nil {
			return nil, fmt.Errorf("corral: task queue %q: %w", queue, err)
		}
		return c.pub.PublishMsg(ctx, m)
	})
	if err != nil {
		return nil, err
	}
	return tasks.Track(queue, cfg, m, c.conn, f.Wait), nil
}

// Tasks returns queue's Queue, to read a task's state, result or last
// error by its id (Info) and to wait for it to end (Wait). It fails with
// ErrUnknownQueue for a queue Config.Tasks does not declare.
func (c *Client) Tasks(queue string) (*tasks.Queue, error) {
	cfg, err := c.queueConfig(queue)
	if err != nil {
		return nil, err
	}
	return tasks.NewQueue(queue, cfg, c.conn), nil
}

// Inspector returns an inspector of the fleet on the Client's connection
// (package inspector): its processes, its task queues, its JetStream
// handlers. It knows the configuration of the queues Config.Tasks
// declares (their dead-letter subjects); it finds others on the server.
func (c *Client) Inspector() *inspector.Inspector {
	queues := map[string]tasks.Config{}
	for name := range c.cfg.Tasks {
		if cfg, err := c.queueConfig(name); err == nil {
			queues[name] = cfg
		}
	}
	return inspector.New(c.conn, queues, inspector.WithJetStreamAPI(c.cfg.JetStreamAPI))
}

// queueConfig is queue's configuration: this process's worker's, if
// HandleTasks declared one, else the file's.
func (c *Client) queueConfig(queue string) (tasks.Config, error) {
	cfg, ok := c.cfg.Tasks[queue]
	if !ok {
		return cfg, fmt.Errorf("%w: %q", ErrUnknownQueue, queue)
	}
	if w, ok := c.Worker(queue); ok {
		cfg = w.Config()
	}
	cfg.JetStreamAPI = cfg.JetStreamAPI.Or(c.cfg.JetStreamAPI)
	return cfg, nil
}

// traceEnqueue runs enqueue in a send span, when tracing, whose context
// it writes in header first: the task's records carry it too.
func (c *Client) traceEnqueue(ctx context.Context, queue, subject string, size int, header nats.Header,
	enqueue func(context.Context) (*publisher.Future, error)) (*publisher.Future, error) {
	if c.tracer == nil {
		return enqueue(ctx)
	}
	ctx, span := c.tracer.StartSend(ctx, Send{Op: "enqueue", Name: queue, Subject: subject, Size: size})
	span.Inject(header)
	f, err := enqueue(ctx)
	span.End(err)
	return f, err
}

// Worker returns this process's worker of queue, declared by HandleTasks.
func (c *Client) Worker(queue string) (*tasks.Worker, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	w, ok := c.workers[queue]
	return w, ok
}

// taskStreams adds the stream of every queue in the tasks section to
// streams (the publisher's), so that tasks can be enqueued before any
// worker has declared it.
func (c Config) taskStreams(streams map[string]stream.Config) map[string]stream.Config {
	if len(c.Tasks) == 0 {
		return streams
	}
	out := maps.Clone(streams)
	if out == nil {
		out = map[string]stream.Config{}
	}
	for _, queue := range slices.Sorted(maps.Keys(c.Tasks)) {
		name, sc := c.Tasks[queue].QueueStream(queue)
		if _, declared := out[name]; !declared {
			out[name] = sc
		}
	}
	return out
}
