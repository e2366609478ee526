package consumer

import (
	"time"

	"github.com/corral-go/corral/internal/conf"
	"github.com/corral-go/corral/internal/subject"
	"github.com/corral-go/corral/supervisor"
)

// Overflow is what a handler does with a message that arrives while its
// task queue is full: the queue being full is how a slow consumer is
// detected.
type Overflow string

const (
	// Block waits for room (backpressure). Messages then wait in the
	// subscription's pending buffer in nats.go, bounded by PendingMsgs and
	// PendingBytes; past those nats.go drops them, and they are counted.
	Block Overflow = "block"
	// DropNewest drops the message that just arrived.
	DropNewest Overflow = "drop_newest"
	// DropOldest drops the oldest queued message to make room.
	DropOldest Overflow = "drop_oldest"
	// Reject answers a request at once with a 503 service error, so the
	// caller fails fast. Request handlers only.
	Reject Overflow = "reject"
)

// Config declares one handler. The zero value of every field but Subject
// means its default. In corral.Config, handlers are keyed by name; a field
// set there overrides the same field declared in code.
type Config struct {
	// Subject is what the handler subscribes to; wildcards allowed.
	Subject string `yaml:"subject"`
	// QueueGroup, when set, shares the subject's messages among every
	// subscriber of the group instead of giving each a copy.
	QueueGroup string `yaml:"queue_group"`
	// Workers is how many messages are handled at once. With 1, messages
	// are handled in the order they arrive. Range 0 to 65536: a goroutine
	// each, and more would only contend. Default 1.
	Workers int `yaml:"workers"`
	// QueueSize bounds the messages waiting for a worker. Default 256.
	// A core handler of one worker that blocks has no queue of its own:
	// it runs on its subscription's goroutine, one hand-off less per
	// message, and its queue is the first QueueSize messages nats.go holds
	// for it (its depth, and the slow-consumer episode that more begin,
	// read as a queue's would).
	// For a JetStream handler what is queued is pulled and held by this
	// instance (kept alive with in-progress acks): a smaller queue spreads
	// work across instances, a larger one keeps fast handlers busy between
	// pulls. Its default adapts to the handler's pace: the handler holds
	// Workers + max(Workers, 64), twice that each time its workers ran out
	// of messages between pulls, up to Workers + max(Workers, 2048) or
	// about 8MiB of messages at their recent size, whichever is fewer,
	// and half as much again after it held all it asked for a second. A
	// value set here is held as it is. Range 0 to 1048576 (1<<20): the
	// queue is a channel allocated at the first message, 8MiB at most.
	QueueSize int `yaml:"queue_size"`
	// Overflow is block, drop_newest, drop_oldest or (request handlers)
	// reject. Default block.
	Overflow Overflow `yaml:"overflow"`
	// Timeout bounds each message: the handler's ctx is cancelled when it
	// runs out, and a request is answered with a 504 service error.
	// Range 0 to 87600h (ten years). Default none.
	Timeout time.Duration `yaml:"timeout"`
	// PendingMsgs and PendingBytes bound what nats.go buffers for the
	// subscription while the queue is full (block); for a handler of one
	// worker that blocks, everything that waits. -1: unlimited.
	// Ranges -1 to 2147483647 messages and -1 to 1TiB. Default nats.go's:
	// 524288 messages and 64MiB.
	PendingMsgs  int           `yaml:"pending_msgs"`
	PendingBytes conf.ByteSize `yaml:"pending_bytes"`
	// LogFailures reports the errors the handler returns as
	// HandlerFailed events, logged at warn: at most one a second, with
	// the number not reported since, the subject and, for JetStream, the
	// stream sequence and delivery count, never the data. false turns
	// them off, for a handler whose failures middleware.Log or the
	// application reports already. Default true.
	LogFailures *bool `yaml:"log_failures"`
	// Restart is the handler's restart policy; zero fields inherit the
	// tree's.
	Restart supervisor.Policy `yaml:"restart"`
	// Middleware wraps this handler inside the group's (see [Middleware]
	// for the order); Middleware[0] is the outermost. Code only: a file
	// cannot set it. Default none.
	Middleware []Middleware `yaml:"-"`
	// Service names the NATS micro service a request handler is an
	// endpoint of (see [Service]). Default: a service of its own, named
	// after the handler, version 0.0.0.
	Service Service `yaml:"service"`

	// JetStream handlers set Stream: the handler consumes a durable pull
	// consumer of that stream instead of subscribing to Subject, which
	// (with FilterSubjects) filters what it receives.
	JetStream `yaml:",inline"`

	adaptQueue bool // QueueSize was defaulted for a JetStream handler
}

// IsJetStream reports whether the handler consumes a stream.
func (c Config) IsJetStream() bool { return c.Stream != "" }

const (
	defaultQueueSize = 256
	// defaultJetStreamQueue is a JetStream handler's smallest default
	// queue: with the queue only as long as the workers, a no-op handler
	// ran at a third of raw Consume, waiting on a pull round trip every
	// few messages. It adapts up to defaultJetStreamQueueMax, what four
	// nats.go Consume calls buffer (a no-op handler on four workers kept
	// 0.84-0.90x their pace at 512), and adaptBytes.
	defaultJetStreamQueue    = 64
	defaultJetStreamQueueMax = 2048
	// adaptBytes bounds what an adapting handler holds, as pulls bound
	// what is on its way (see internal/pull).
	adaptBytes      = 8 << 20
	defaultPending  = 512 * 1024
	defaultPendingB = 64 << 20
	// maxPendingBytes bounds PendingBytes: 1TiB, a limit nats.go keeps
	// as a count, never allocates.
	maxPendingBytes = 1 << 40
)

// logFailures is LogFailures, true when unset.
func (c Config) logFailures() bool { return c.LogFailures == nil || *c.LogFailures }

func (c Config) withDefaults() Config {
	if c.Workers == 0 {
		c.Workers = 1
	}
	if c.QueueSize == 0 {
		c.QueueSize = defaultQueueSize
		if c.IsJetStream() {
			// Held messages are kept alive, but another instance cannot
			// have them: hold enough to cover a pull round trip at the
			// handler's pace, no more (see pull.Config.Floor).
			c.QueueSize = max(c.Workers, defaultJetStreamQueueMax)
			c.adaptQueue = true
		}
	}
	if c.IsJetStream() {
		if c.AckWait == 0 {
			c.AckWait = 30 * time.Second
		}
		if c.MaxDeliver == 0 {
			c.MaxDeliver = 5
		}
		if len(c.Backoff) == 0 {
			c.Backoff = []time.Duration{time.Second, 5 * time.Second, 30 * time.Second}
		}
	}
	if c.Overflow == "" {
		c.Overflow = Block
	}
	if c.PendingMsgs == 0 {
		c.PendingMsgs = defaultPending
	}
	if c.PendingBytes == 0 {
		c.PendingBytes = defaultPendingB
	}
	c.Restart = c.Restart.Inherit(supervisor.Defaults())
	return c
}

// Validate reports every invalid field at once, wrapping supervisor.ErrInvalidConfig.
// Whether reject suits the handler (request handlers only) is checked when
// it is declared.
func (c Config) Validate() error {
	return c.validate(false)
}

// ValidateOverride validates an entry that overrides a declaration made in
// code (corral.Config.Handlers): any field may be left empty.
func (c Config) ValidateOverride() error {
	return c.validate(true)
}

func (c Config) validate(partial bool) error {
	p := conf.NewProblems("")
	if c.Subject != "" || (!partial && !c.IsJetStream()) {
		if err := subject.Validate(c.Subject, true); err != nil {
			p.Addf("subject", "%v", err)
		}
	}
	if c.IsJetStream() || c.jetStreamFieldsSet() {
		c.JetStream.validate(p, partial)
	}
	if c.QueueGroup != "" {
		if err := subject.ValidateQueue(c.QueueGroup); err != nil {
			p.Addf("queue_group", "%v", err)
		}
	}
	p.Between("workers", int64(c.Workers), 0, conf.MaxWorkers)
	p.Between("queue_size", int64(c.QueueSize), 0, conf.MaxQueue)
	switch c.Overflow {
	case "", Block:
	case DropNewest, DropOldest:
		if c.IsJetStream() {
			p.Addf("overflow", "%s: a JetStream handler never drops; it pulls only what it has room for", c.Overflow)
		}
	case Reject:
		if c.IsJetStream() {
			p.Addf("overflow", "reject answers core requests; a JetStream handler never drops")
		}
	default:
		p.Addf("overflow", "%q is not one of block, drop_newest, drop_oldest, reject", c.Overflow)
	}
	p.Durations(conf.MaxDuration, conf.NamedDuration{Name: "timeout", V: c.Timeout})
	p.Between("pending_msgs", int64(c.PendingMsgs), -1, conf.MaxCount)
	p.Between("pending_bytes", int64(c.PendingBytes), -1, maxPendingBytes)
	p.Merge("restart", c.Restart.Validate())
	return p.Err()
}
