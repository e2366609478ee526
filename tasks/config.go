package tasks

import (
	"fmt"
	"strings"
	"time"

	"github.com/corral-go/corral/connection"
	"github.com/corral-go/corral/internal/conf"
	"github.com/corral-go/corral/internal/subject"
	"github.com/corral-go/corral/stream"
	"github.com/corral-go/corral/supervisor"
)

// Config declares a task queue and this process's worker for it. The zero
// value of every field is its default; in corral.Config, queues are keyed
// by name under tasks.
type Config struct {
	// Subject is where tasks are enqueued. Subjects under
	// "corral.tasks.<any queue>." are the queues' own and refused. Default
	// "corral.tasks.<queue>".
	Subject string `yaml:"subject"`
	// Stream holds enqueued tasks until a worker takes them; it is
	// declared with work-queue retention. Default "TASKS_<queue>".
	Stream string `yaml:"stream"`
	// Replicas and Storage apply to the queue's streams and its lease
	// bucket. Defaults 1 and file.
	Replicas int    `yaml:"replicas"`
	Storage  string `yaml:"storage"`
	// Placement puts the queue's streams and its lease bucket in a
	// cluster of a supercluster, or on servers with tags (see
	// stream.Placement). Default: the cluster of the server the first
	// declaration reaches.
	Placement *stream.Placement `yaml:"placement"`
	// MaxConcurrency is how many tasks this worker runs at once: it takes
	// no more from the queue, but for those it takes ahead (Prefetch).
	// Workers of one queue may each set their own.
	// Range 0 to 65536: a goroutine each. Default 16.
	MaxConcurrency int `yaml:"max_concurrency"`
	// Prefetch is the most tasks the worker takes from the queue beyond
	// its free slots, so that a slot that frees starts its next task
	// without waiting for the server, as a JetStream handler's queue
	// does. The worker takes ahead no more than its runs ended in the
	// last 10 to 20ms, so a worker running long tasks takes none. A task
	// taken ahead is neither started nor claimed (Status.Held counts it):
	// it stays the queue's, and one that waited a tenth of ClaimWait (at
	// most 1s) without a slot is given back at once, for other workers
	// (counted in PassedOver); given back, it is delivered again, so it is
	// claimed before it runs. -1 takes none ahead. Range -1 to 65536.
	// Default (0) 256.
	Prefetch int `yaml:"prefetch"`
	// Heartbeat is how often the worker renews its lease: the only
	// keep-alive traffic, whatever the number of tasks it runs. Range
	// 100ms to 87600h (ten years). Default 3s.
	Heartbeat time.Duration `yaml:"heartbeat"`
	// LeaseTTL is how long a lease outlives its last renewal. A worker
	// that stops renewing (killed, cut off) has its tasks handed to others
	// this long after, and one that cannot renew stops its tasks before
	// then. At least three heartbeats and 1s, at most 87600h (ten years).
	// Default 10s.
	LeaseTTL time.Duration `yaml:"lease_ttl"`
	// ClaimWait is how long a task taken from the queue may stay unclaimed
	// (the worker crashed in between, or died while it ran the task
	// before ClaimAfter) before it is offered again: the queue consumer's
	// ack wait. Range 1s to 87600h (ten years). Default LeaseTTL.
	ClaimWait time.Duration `yaml:"claim_wait"`
	// ClaimAfter is how long a task enqueued on Subject (Client.Enqueue)
	// runs before the worker claims it. A task that ends sooner costs one
	// acknowledgement and leaves no record: were the worker to die before
	// that is stored, the task runs again after ClaimWait, as a JetStream
	// handler's message would. Tasks enqueued with EnqueueTask, periodic
	// ticks and tasks that came back are claimed before they run. A
	// negative value claims every task first. At most half ClaimWait.
	// Default 1s.
	ClaimAfter time.Duration `yaml:"claim_after"`
	// Timeout bounds one run of a task's handler, not the claim before it
	// or the writes after: its ctx is cancelled and the run counts as
	// failed. Range 0 to 87600h (ten years). Default none.
	Timeout time.Duration `yaml:"timeout"`
	// MaxFailures is how many runs of a task may fail (the handler returns
	// an error) before the task is dropped, to DeadLetter if set. -1: no
	// limit. Range -1 to 2147483647. Default 5.
	MaxFailures int `yaml:"max_failures"`
	// Backoff is the wait before a failed task is offered again, by its
	// failure count, the last repeating. Each 0 to 87600h (ten years).
	// Default [1s, 5s, 30s].
	Backoff []time.Duration `yaml:"backoff"`
	// DeadLetter is the subject a task is published to, with its headers
	// and the last error, once it failed MaxFailures times.
	DeadLetter string `yaml:"dead_letter"`
	// DeadLetterStream names the stream that stores DeadLetter, and
	// CreateDeadLetterStream declares it: the worker creates it, or
	// updates it to match, before it checks DeadLetter, so that no
	// worker waits on another process to declare it first. A Client sets
	// both from its streams section. Default: the stream must exist.
	DeadLetterStream       string         `yaml:"-"`
	CreateDeadLetterStream *stream.Config `yaml:"-"`
	// KeepCompleted is how long a completed task is remembered, so that a
	// late duplicate of it is dropped instead of run again. At least twice
	// ClaimWait, at most 87600h (ten years). Default 2m.
	KeepCompleted time.Duration `yaml:"keep_completed"`
	// KeepResults is how long a completed task's result (Task.SetResult)
	// is kept, with its tombstone, for Queue.Info and Queue.Wait to read.
	// At least KeepCompleted, at most 87600h (ten years). Default
	// KeepCompleted.
	KeepResults time.Duration `yaml:"keep_results"`
	// MaxResult is the most bytes a task's result may have: Task.SetResult
	// refuses more, as it does more than the server's max_payload takes
	// beside the tombstone's headers. Range 0 to 64 MiB. Default 64 KiB.
	MaxResult conf.ByteSize `yaml:"max_result"`
	// SweepEvery is how often the elected recoverer looks for tasks held by
	// workers that have no lease, beside reacting to every expired lease
	// at once. Range 0 to 87600h (ten years). Default 1m.
	SweepEvery time.Duration `yaml:"sweep_every"`
	// Process names this worker's process for people, beside its lease's
	// identity, which changes with every lease: it is shown in Status, in
	// the events about the worker, in the Corral-Task-Process header of
	// the records and tombstones it writes, and in its lease's key.
	// Whoever reads the queue's streams, the logs or the status sees it:
	// it must hold no secret. At most MaxProcessLen (256) bytes of UTF-8
	// text without control characters or white space at either end.
	// Default DefaultProcess(""), "<host>/<pid>"; a corral.Client's
	// HandleTasks gives "<name>@<host>/<pid>", with the Client's name.
	Process string `yaml:"process"`
	// Schedules are the queue's periodic tasks, by name (letters, digits,
	// - and _): the worker declares them on the queue's stream when it
	// starts, and deletes those Corral declared that it no longer has.
	// Workers of a queue should declare the same: the last to start
	// stands. In a corral.Config, the file's schedules, if it has any,
	// replace those declared in code.
	Schedules map[string]Schedule `yaml:"schedules"`
	// JetStreamAPI is the JetStream the queue is in, when it is not the
	// account's own: another domain's (a leaf node's hub) or an imported
	// one's. Its streams, consumers and lease bucket are declared there,
	// and the worker's lease is renewed there: a worker cut off from it
	// for LeaseTTL stops its tasks, as one cut off from its server does.
	// corral.Client sets it to its own (Config.JetStreamAPI) when it is
	// not set.
	JetStreamAPI connection.JetStreamAPI `yaml:"jetstream"`
	// Restart is the worker's restart policy; zero fields inherit the
	// tree's.
	Restart supervisor.Policy `yaml:"restart"`

	// Events says where the worker's events go.
	Events supervisor.Events `yaml:"-"`
}

const (
	defaultConcurrency = 16
	defaultPrefetch    = 256
	defaultHeartbeat   = 3 * time.Second
	defaultLeaseTTL    = 10 * time.Second
	defaultClaimAfter  = time.Second
	defaultFailures    = 5
	defaultKeep        = 2 * time.Minute
	defaultSweep       = time.Minute
	defaultMaxResult   = 64 << 10
	maxMaxResult       = 64 << 20
)

// withDefaults fills the zero fields of the configuration of queue.
func (c Config) withDefaults(queue string) Config {
	if c.Subject == "" {
		c.Subject = "corral.tasks." + queue
	}
	if c.Stream == "" {
		c.Stream = "TASKS_" + queue
	}
	if c.MaxConcurrency == 0 {
		c.MaxConcurrency = defaultConcurrency
	}
	if c.Prefetch == 0 {
		c.Prefetch = defaultPrefetch
	}
	if c.Heartbeat == 0 {
		c.Heartbeat = defaultHeartbeat
	}
	if c.LeaseTTL == 0 {
		c.LeaseTTL = max(defaultLeaseTTL, 3*c.Heartbeat)
	}
	if c.ClaimWait == 0 {
		c.ClaimWait = c.LeaseTTL
	}
	if c.ClaimAfter == 0 {
		c.ClaimAfter = min(defaultClaimAfter, c.ClaimWait/2)
	}
	if c.MaxFailures == 0 {
		c.MaxFailures = defaultFailures
	}
	if len(c.Backoff) == 0 {
		c.Backoff = []time.Duration{time.Second, 5 * time.Second, 30 * time.Second}
	}
	if c.KeepCompleted == 0 {
		c.KeepCompleted = max(defaultKeep, 2*c.ClaimWait)
	}
	if c.KeepResults == 0 {
		c.KeepResults = c.KeepCompleted
	}
	if c.MaxResult == 0 {
		c.MaxResult = defaultMaxResult
	}
	if c.SweepEvery == 0 {
		c.SweepEvery = defaultSweep
	}
	c.Restart = c.Restart.Inherit(supervisor.Defaults())
	return c
}

// Validate reports every invalid field at once, wrapping supervisor.ErrInvalidConfig.
func (c Config) Validate() error {
	p := conf.NewProblems("")
	if c.Subject != "" {
		if err := subject.Validate(c.Subject, false); err != nil {
			p.Addf("subject", "%v", err)
		} else if subject.Subset(c.Subject, queuesPattern) {
			p.Addf("subject", "%q is under corral.tasks.<queue>., the subjects of the queues' own records, waiting copies and schedules", c.Subject)
		}
	}
	if c.Stream != "" {
		if err := subject.ValidBucket(c.Stream); err != nil {
			p.Addf("stream", "%v", err)
		}
	}
	p.Replicas(c.Replicas)
	p.Storage(c.Storage)
	p.Between("max_concurrency", int64(c.MaxConcurrency), 0, conf.MaxWorkers)
	p.Between("prefetch", int64(c.Prefetch), -1, conf.MaxWorkers)
	if p.Durations(conf.MaxDuration,
		conf.NamedDuration{Name: "heartbeat", V: c.Heartbeat}, conf.NamedDuration{Name: "lease_ttl", V: c.LeaseTTL},
		conf.NamedDuration{Name: "claim_wait", V: c.ClaimWait}, conf.NamedDuration{Name: "timeout", V: c.Timeout},
		conf.NamedDuration{Name: "keep_completed", V: c.KeepCompleted}, conf.NamedDuration{Name: "keep_results", V: c.KeepResults},
		conf.NamedDuration{Name: "sweep_every", V: c.SweepEvery},
	) {
		c.validateTimes(p) // it multiplies durations: only once each is in range
	}
	p.Between("max_failures", int64(c.MaxFailures), -1, conf.MaxCount)
	p.Between("max_result", int64(c.MaxResult), 0, maxMaxResult)
	for i, b := range c.Backoff {
		p.Durations(conf.MaxDuration, conf.NamedDuration{Name: fmt.Sprintf("backoff[%d]", i), V: b})
	}
	if c.DeadLetter != "" {
		if err := subject.Validate(c.DeadLetter, false); err != nil {
			p.Addf("dead_letter", "%v", err)
		}
	}
	if c.CreateDeadLetterStream != nil {
		if err := stream.ValidName(c.DeadLetterStream); err != nil {
			p.Addf("dead_letter_stream", "%v", err)
		}
		p.Merge("create_dead_letter_stream", c.CreateDeadLetterStream.Validate())
		if !c.CreateDeadLetterStream.Stores(c.DeadLetter) {
			p.Addf("create_dead_letter_stream", "does not store dead_letter %q", c.DeadLetter)
		}
	}
	for name, s := range c.Schedules {
		path := "schedules." + name
		if name == "" || len(name) > maxScheduleName || strings.IndexFunc(name, func(r rune) bool { return r >= 0x80 || !literal(byte(r)) }) >= 0 {
			p.Addf(path, "a schedule's name is 1 to %d letters, digits, - and _", maxScheduleName)
			continue
		}
		s.validate(p, path)
	}
	if err := checkProcess(c.Process); err != nil {
		p.Addf("process", "%v", err)
	}
	p.Merge("restart", c.Restart.Validate())
	p.Merge("placement", c.Placement.Validate())
	p.Merge("jetstream", c.JetStreamAPI.Validate())
	return p.Err()
}

// validateTimes checks the durations against each other, with defaults.
func (c Config) validateTimes(p conf.Problems) {
	d := c.withDefaults("q")
	if d.Heartbeat < 100*time.Millisecond {
		p.Addf("heartbeat", "must be at least 100ms, got %v", d.Heartbeat)
	}
	if d.LeaseTTL < 3*d.Heartbeat || d.LeaseTTL < time.Second {
		p.Addf("lease_ttl", "%v must be at least 1s and three heartbeats (%v): one lost renewal must not lose the lease",
			d.LeaseTTL, 3*d.Heartbeat)
	}
	if d.ClaimWait < time.Second {
		p.Addf("claim_wait", "must be at least 1s, got %v", d.ClaimWait)
	}
	if d.ClaimAfter > d.ClaimWait/2 {
		p.Addf("claim_after", "%v must be at most half claim_wait (%v): a task must be claimed well before its copy is offered again",
			d.ClaimAfter, d.ClaimWait)
	}
	if d.KeepCompleted < 2*d.ClaimWait {
		p.Addf("keep_completed", "%v must be at least twice claim_wait (%v): a completed task's late duplicate is dropped only while it is remembered",
			d.KeepCompleted, d.ClaimWait)
	}
	if d.KeepResults < d.KeepCompleted {
		p.Addf("keep_results", "%v must be at least keep_completed (%v): a result outlives its task's tombstone only as long as it",
			d.KeepResults, d.KeepCompleted)
	}
}

// QueueStream returns the name and declaration of queue's stream, where
// tasks wait for a worker: work-queue retention, and a duplicate window
// as long as KeepCompleted, so that a task enqueued again with the same
// Msg-Id (a retried publish) is stored once. Its subjects are Subject,
// first, then the queue's own: "corral.tasks.<queue>.t.>" and
// "corral.tasks.<queue>.periodic.*", kept for the waiting copies and the
// schedules of tasks; and it allows message schedules, so that its
// declaration fails, with stream.ErrSchedulesUnsupported, on a server
// older than 2.12. Workers declare it; a publisher that enqueues before
// any worker runs declares the same.
func (c Config) QueueStream(queue string) (string, stream.Config) {
	c = c.withDefaults(queue)
	subjects := []string{c.Subject, fmt.Sprintf(waitingAllTmpl, queue), fmt.Sprintf(periodicAllTmpl, queue)}
	return c.Stream, stream.Config{Subjects: subjects, Retention: "workqueue", Storage: c.Storage,
		Replicas: c.Replicas, Duplicates: c.KeepCompleted, AllowMsgSchedules: true, Placement: c.Placement}
}

// ValidateNames reports whether queue and its stream can name what New
// builds from them, every problem at once, wrapping [supervisor.ErrInvalidConfig]:
// the queue's name is letters, digits, - and _, at most 238 bytes, as it
// names the lease bucket "corral_tasks_<queue>"; cfg's stream at most 250
// bytes, as it names the held stream "<stream>_HELD" (the default,
// "TASKS_<queue>", fits whenever the queue's name does). Each error gives
// the name's own length and limit. The problem with the stream is under
// the field "stream".
func ValidateNames(queue string, cfg Config) error {
	p := conf.NewProblems("")
	maxQueue := subject.MaxBucketLen - len(fmt.Sprintf(leaseBucketTmpl, ""))
	// The tighter limit first: ValidBucket's own is a bucket's, longer.
	if err := subject.CheckLen("queue name", queue, maxQueue); err != nil {
		p.Addf("", "%v: it names the lease bucket %q", err, fmt.Sprintf(leaseBucketTmpl, "<queue>"))
	} else if err := subject.ValidBucket(queue); err != nil {
		p.Addf("", "queue %v", err)
	}
	maxStream := subject.MaxNameLen - len(fmt.Sprintf(heldStreamTmpl, ""))
	if err := subject.CheckLen("name", cfg.Stream, maxStream); err != nil {
		p.Addf("stream", "%v: it names the held stream %q", err, fmt.Sprintf(heldStreamTmpl, "<stream>"))
	}
	return p.Err()
}
