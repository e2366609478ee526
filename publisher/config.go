package publisher

import (
	"maps"

	"slices"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/corral-go/corral/connection"
	"github.com/corral-go/corral/internal/conf"
	"github.com/corral-go/corral/stream"
	"github.com/corral-go/corral/supervisor"
)

// OnFull is what Publish does when the buffer is full.
type OnFull string

const (
	// Error makes Publish fail at once with ErrBufferFull.
	Error OnFull = "error"
	// Block makes Publish wait for room until its ctx ends.
	Block OnFull = "block"
)

// Config configures the buffered publisher. Every zero field takes the
// default its comment states.
type Config struct {
	// BufferMsgs and BufferBytes bound the messages accepted and not yet
	// acknowledged (queued, in flight, or waiting to be retried).
	// Ranges 0 to 16777216 (1<<24) messages and 0 to 1TiB: counts of what
	// is held in memory. Defaults 10000 and 64MiB.
	BufferMsgs  int           `yaml:"buffer_msgs"`
	BufferBytes conf.ByteSize `yaml:"buffer_bytes"`
	// OnFull is error (default) or block.
	OnFull OnFull `yaml:"on_full"`
	// MaxInFlight bounds the messages sent and not yet acknowledged.
	// Range 0 to 65536: nats.go is given room for twice as many pending
	// acks. Default 4000.
	MaxInFlight int `yaml:"max_in_flight"`
	// AckTimeout is how long a sent message waits for its ack before it is
	// sent again. Range 0 to 24h. Default 5s.
	AckTimeout time.Duration `yaml:"ack_timeout"`
	// RetryWait is the wait before the first retry of a failed send; it
	// doubles with each further failure of that message, up to
	// MaxRetryWait. Ranges 0 to 24h. Defaults 100ms and 5s. A send that
	// fails because the connection dropped is retried as soon as it is
	// back.
	RetryWait    time.Duration `yaml:"retry_wait"`
	MaxRetryWait time.Duration `yaml:"max_retry_wait"`
	// MaxAttempts is how many sends of a message may fail (time out, or
	// meet an error that may clear) before it fails for good with
	// ErrGaveUp. Sends lost to a dropped or replaced connection do not
	// count: an outage is what the buffer absorbs. Default 20 (with the
	// default waits, minutes of failing); -1 retries without limit. Range
	// -1 to 2147483647.
	MaxAttempts int `yaml:"max_attempts"`
	// NoMsgID sends messages without a generated Nats-Msg-Id (one set
	// with WithMsgID is still sent). The stream then keeps no record of
	// them for deduplication, which makes each publish cheaper, and a
	// message sent again after its ack was lost (a disconnect, an ack
	// timeout) may be stored twice. Default false: every message carries
	// an id, and a re-send within the duplicate window is stored once.
	NoMsgID bool `yaml:"no_msg_id"`
	// SpoolDir, when set, keeps accepted messages in files there until they
	// are acknowledged, so that a crash of the application loses none: the
	// next start sends them. Default none: a crash loses what the buffer
	// holds.
	SpoolDir string `yaml:"spool_dir"`
	// SpoolSync fsyncs every spooled message and settle record, and the
	// directory when segments come and go, so that the spool survives a
	// crash of the machine too, at the cost of most of the throughput.
	// Default false: it survives a crash of the process.
	SpoolSync bool `yaml:"spool_sync"`
	// Streams are declared (created, or updated to match) whenever the
	// publisher connects, before it sends.
	Streams map[string]stream.Config `yaml:"streams"`
	// JetStreamAPI is the JetStream Streams are declared in, when it is
	// not the account's own (see connection.JetStreamAPI). Messages are
	// routed by their subjects wherever it points; their acks come from
	// whichever stream stores them. corral.Client sets it to its own
	// (Config.JetStreamAPI) when it is not set.
	JetStreamAPI connection.JetStreamAPI `yaml:"jetstream"`
	// Restart is the publisher's restart policy; its shutdown timeout is
	// how long a stop keeps flushing.
	Restart supervisor.Policy `yaml:"restart"`

	// Events says where the publisher's events go.
	Events supervisor.Events `yaml:"-" json:"-"`
	// OnUndelivered is called with a copy of every accepted message that
	// ends without being stored, headers and Nats-Msg-Id included, and why:
	// a final error (also on its Future; for a message recovered from the
	// spool, this is the only report), or a stop without a spool
	// (ErrStopped, with ErrMaybeStored if it was sent and not confirmed:
	// publish it again with the same Msg-Id, not a new one). It runs on
	// whichever goroutine settles the message (the send loop, nats.go's
	// callback goroutine, a PublishSync caller) and must not block.
	// Default: none (they are still counted, and reported in events).
	OnUndelivered func(msg *nats.Msg, err error) `yaml:"-" json:"-"`

	// segmentSize is the spool's segment size; tests make it small.
	segmentSize int64
}

// The ranges of the publisher's own settings; its durations are bounded
// by conf.MaxPolicyDuration and max_attempts by conf.MaxCount.
const (
	// maxBufferMsgs bounds BufferMsgs: 16777216 (1<<24) messages.
	maxBufferMsgs = 1 << 24
	// maxBufferBytes bounds BufferBytes: 1TiB, a limit counted, never
	// allocated.
	maxBufferBytes = 1 << 40
	// maxInFlight bounds MaxInFlight: the session asks nats.go for
	// 2*MaxInFlight+1 pending acks.
	maxInFlight = 1 << 16
)

func (c Config) withDefaults() Config {
	if c.BufferMsgs == 0 {
		c.BufferMsgs = 10000
	}
	if c.BufferBytes == 0 {
		c.BufferBytes = 64 << 20
	}
	if c.OnFull == "" {
		c.OnFull = Error
	}
	if c.MaxInFlight == 0 {
		c.MaxInFlight = 4000
	}
	if c.AckTimeout == 0 {
		c.AckTimeout = 5 * time.Second
	}
	if c.MaxAttempts == 0 {
		c.MaxAttempts = 20
	}
	if c.RetryWait == 0 {
		c.RetryWait = 100 * time.Millisecond
	}
	if c.MaxRetryWait == 0 {
		c.MaxRetryWait = max(5*time.Second, c.RetryWait)
	}
	c.Restart = c.Restart.Inherit(supervisor.Defaults())
	return c
}

// Validate reports every invalid field at once, wrapping supervisor.ErrInvalidConfig.
func (c Config) Validate() error {
	p := conf.NewProblems("")
	p.Between("buffer_msgs", int64(c.BufferMsgs), 0, maxBufferMsgs)
	p.Between("buffer_bytes", int64(c.BufferBytes), 0, maxBufferBytes)
	switch c.OnFull {
	case "", Error, Block:
	default:
		p.Addf("on_full", "%q is not one of error, block", c.OnFull)
	}
	p.Between("max_in_flight", int64(c.MaxInFlight), 0, maxInFlight)
	p.Durations(conf.MaxPolicyDuration, conf.NamedDuration{Name: "ack_timeout", V: c.AckTimeout},
		conf.NamedDuration{Name: "retry_wait", V: c.RetryWait}, conf.NamedDuration{Name: "max_retry_wait", V: c.MaxRetryWait})
	p.Between("max_attempts", int64(c.MaxAttempts), -1, conf.MaxCount)
	if c.RetryWait > 0 && c.MaxRetryWait > 0 && c.MaxRetryWait < c.RetryWait {
		p.Addf("max_retry_wait", "%v is shorter than retry_wait %v", c.MaxRetryWait, c.RetryWait)
	}
	for _, name := range slices.Sorted(maps.Keys(c.Streams)) {
		if err := stream.ValidName(name); err != nil {
			p.Addf("streams", "stream %v", err)
		}
		p.Merge("streams."+name, c.Streams[name].Validate())
	}
	p.Merge("restart", c.Restart.Validate())
	p.Merge("jetstream", c.JetStreamAPI.Validate())
	return p.Err()
}
