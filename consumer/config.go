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
	// are handled in the order they arrive. Default 1.
	Workers int `yaml:"workers"`
	// QueueSize bounds the messages waiting for a worker. Default 256.
	QueueSize int `yaml:"queue_size"`
	// Overflow is block, drop_newest, drop_oldest or (request handlers)
	// reject. Default block.
	Overflow Overflow `yaml:"overflow"`
	// Timeout bounds each message: the handler's ctx is cancelled when it
	// runs out, and a request is answered with a 504 service error.
	// Default none.
	Timeout time.Duration `yaml:"timeout"`
	// PendingMsgs and PendingBytes bound what nats.go buffers for the
	// subscription while the queue is full (block). -1: unlimited.
	// Default nats.go's: 524288 messages and 64MiB.
	PendingMsgs  int           `yaml:"pending_msgs"`
	PendingBytes conf.ByteSize `yaml:"pending_bytes"`
	// Restart is the handler's restart policy; zero fields inherit the
	// tree's.
	Restart supervisor.Policy `yaml:"restart"`
}

const (
	defaultQueueSize = 256
	defaultPending   = 512 * 1024
	defaultPendingB  = 64 << 20
)

// Override returns c with every non-zero field of o in its place, so that
// a configuration file retunes a handler declared in code.
func (c Config) Override(o Config) Config {
	if o.Subject != "" {
		c.Subject = o.Subject
	}
	if o.QueueGroup != "" {
		c.QueueGroup = o.QueueGroup
	}
	if o.Workers != 0 {
		c.Workers = o.Workers
	}
	if o.QueueSize != 0 {
		c.QueueSize = o.QueueSize
	}
	if o.Overflow != "" {
		c.Overflow = o.Overflow
	}
	if o.Timeout != 0 {
		c.Timeout = o.Timeout
	}
	if o.PendingMsgs != 0 {
		c.PendingMsgs = o.PendingMsgs
	}
	if o.PendingBytes != 0 {
		c.PendingBytes = o.PendingBytes
	}
	c.Restart = o.Restart.Inherit(c.Restart)
	return c
}

func (c Config) withDefaults() Config {
	if c.Workers == 0 {
		c.Workers = 1
	}
	if c.QueueSize == 0 {
		c.QueueSize = defaultQueueSize
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

// Validate reports every invalid field at once, wrapping ErrInvalidConfig.
// request says whether the handler answers requests (reject is allowed).
func (c Config) Validate(request bool) error {
	return c.validate(request, false)
}

// ValidateOverride validates an entry that overrides a declaration made in
// code (corral.Config.Handlers): any field may be left empty, and reject
// is checked when code binds the handler.
func (c Config) ValidateOverride() error {
	return c.validate(true, true)
}

func (c Config) validate(request, partial bool) error {
	p := conf.NewProblems("")
	if c.Subject != "" || !partial {
		if err := subject.Validate(c.Subject, true); err != nil {
			p.Addf("subject", "%v", err)
		}
	}
	if c.QueueGroup != "" {
		if err := subject.ValidateQueue(c.QueueGroup); err != nil {
			p.Addf("queue_group", "%v", err)
		}
	}
	if c.Workers < 0 {
		p.Addf("workers", "must not be negative, got %d", c.Workers)
	}
	if c.QueueSize < 0 {
		p.Addf("queue_size", "must not be negative, got %d", c.QueueSize)
	}
	switch c.Overflow {
	case "", Block, DropNewest, DropOldest:
	case Reject:
		if !request {
			p.Addf("overflow", "reject answers requests; this handler does not (use HandleRequest)")
		}
	default:
		p.Addf("overflow", "%q is not one of block, drop_newest, drop_oldest, reject", c.Overflow)
	}
	if c.Timeout < 0 {
		p.Addf("timeout", "must not be negative, got %v", c.Timeout)
	}
	if c.PendingMsgs < -1 {
		p.Addf("pending_msgs", "must be -1 (unlimited) or more, got %d", c.PendingMsgs)
	}
	if c.PendingBytes < -1 {
		p.Addf("pending_bytes", "must be -1 (unlimited) or more, got %d", c.PendingBytes)
	}
	p.Merge("restart", c.Restart.Validate())
	return p.Err()
}
