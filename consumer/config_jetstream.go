package consumer

import (
	"fmt"
	"time"

	"github.com/corral-go/corral/connection"
	"github.com/corral-go/corral/internal/conf"
	"github.com/corral-go/corral/internal/subject"
	"github.com/corral-go/corral/stream"
)

// JetStream configures a JetStream handler: at-least-once processing of a
// durable pull consumer. nil from the handler acks the message, an error
// naks it with the Backoff delay for its delivery count, a terminal error
// (Terminal) sends it to DeadLetter at once, if set, and terminates it, and
// past MaxDeliver it goes to DeadLetter.
type JetStream struct {
	// Stream is the stream to consume.
	Stream string `yaml:"stream"`
	// JetStreamAPI is the JetStream the stream is in, when it is not the
	// account's own: another domain's (a leaf node's hub) or an imported
	// one's. The consumer, Stream, CreateStream and the dead-letter stream
	// are declared there and pulled from there. corral.Client sets it to
	// its own (Config.JetStreamAPI) when it is not set.
	JetStreamAPI connection.JetStreamAPI `yaml:"jetstream"`
	// Consumer is the durable consumer's name. Default: the handler name.
	Consumer string `yaml:"consumer"`
	// Bind uses the existing consumer as it is, and fails (per the restart
	// policy) when it does not exist. Default false: the consumer is
	// created, or updated to match this configuration, at start.
	Bind bool `yaml:"bind"`
	// FilterSubjects select the stream's messages, besides Subject.
	FilterSubjects []string `yaml:"filter_subjects"`
	// DeliverPolicy is where a new consumer starts: all (default), new,
	// last or last_per_subject.
	DeliverPolicy string `yaml:"deliver_policy"`
	// AckWait is how long the server waits for an ack before redelivering.
	// Handlers that run longer are kept alive with in-progress acks.
	// Range 100ms to 87600h (ten years). Default 30s.
	AckWait time.Duration `yaml:"ack_wait"`
	// MaxDeliver bounds deliveries of a message; past it the message goes
	// to DeadLetter (if set) and is terminated. -1: unlimited. Range -1
	// to 2147483647. Default 5.
	MaxDeliver int `yaml:"max_deliver"`
	// Backoff is the nak delay by delivery count: the first failure waits
	// Backoff[0], the second Backoff[1], and so on, the last repeating.
	// Each 0 to 87600h (ten years). Default [1s, 5s, 30s].
	Backoff []time.Duration `yaml:"backoff"`
	// MaxAckPending bounds unacknowledged messages across every instance
	// of the consumer: those held, and those naked and waiting out their
	// backoff. At the limit the server delivers nothing new, and
	// redeliveries can wait far past their nak delay; a handler near it is
	// reported ([AckPendingHigh], [Status].NearMaxAckPending). Default the
	// server's (1000), or twice Workers + QueueSize when that is more, so
	// that one instance's own pool never reaches it; a lower limit of the
	// stream's, account's or server's still applies. Each instance declares
	// the consumer with its own value when it starts, so instances whose
	// pools differ (a rolling deploy) leave the last one's: set it when
	// they differ. Each instance reads the consumer's info every 5s to
	// report it. -1: unlimited. Range -1 to 2147483647.
	MaxAckPending int `yaml:"max_ack_pending"`
	// InactiveThreshold deletes the consumer after this long without a
	// client. Range 0 to 87600h (ten years). Default never.
	InactiveThreshold time.Duration `yaml:"inactive_threshold"`
	// DeadLetter is the subject a message is published to, with its
	// headers and the reason, once MaxDeliver is reached or the handler
	// returns a Terminal error; it is terminated only after that publish is
	// acknowledged by a stream.
	DeadLetter string `yaml:"dead_letter"`
	// DoubleAck waits for the server to confirm each ack. Default false.
	DoubleAck bool `yaml:"double_ack"`
	// SlowAfter is how long the pool may stay full before the handler is
	// reported as a slow consumer. Default half the consumer's ack wait
	// (AckWait, or a bound consumer's own). Range 0 to 87600h.
	SlowAfter time.Duration `yaml:"slow_after"`
	// CreateStream declares the stream (created, or updated to match)
	// before the consumer; leave it empty to use an existing stream.
	CreateStream *stream.Config `yaml:"create_stream"`
	// DeadLetterStream names the stream that stores DeadLetter, and
	// CreateDeadLetterStream declares it: the handler creates it, or
	// updates it to match, before it starts, as it does its own with
	// CreateStream, so that it waits on nothing else to declare it (on a
	// cluster, another process may not have yet). corral.Client sets both
	// from its streams. Default none: a stream that stores DeadLetter
	// must exist when the handler starts.
	DeadLetterStream       string         `yaml:"-"`
	CreateDeadLetterStream *stream.Config `yaml:"-"`
}

// jetStreamFieldsSet reports whether any JetStream field is set, so that
// one set without Stream is reported rather than ignored.
func (c Config) jetStreamFieldsSet() bool {
	j := c.JetStream
	return j.Consumer != "" || j.Bind || len(j.FilterSubjects) > 0 || j.DeliverPolicy != "" || j.AckWait != 0 ||
		j.MaxDeliver != 0 || len(j.Backoff) > 0 || j.MaxAckPending != 0 || j.InactiveThreshold != 0 ||
		j.DeadLetter != "" || j.DoubleAck || j.SlowAfter != 0 || j.CreateStream != nil || j.CreateDeadLetterStream != nil ||
		!j.JetStreamAPI.IsZero()
}

func (j JetStream) validate(p conf.Problems, partial bool) {
	if j.Stream == "" && !partial {
		p.Addf("stream", "required with the JetStream settings")
	}
	if err := stream.ValidName(j.Stream); j.Stream != "" && err != nil {
		p.Addf("stream", "%v", err)
	}
	if err := stream.ValidName(j.Consumer); j.Consumer != "" && err != nil {
		p.Addf("consumer", "%v", err)
	}
	for i, f := range j.FilterSubjects {
		if err := subject.Validate(f, true); err != nil {
			p.Addf(fmt.Sprintf("filter_subjects[%d]", i), "%v", err)
		}
	}
	switch j.DeliverPolicy {
	case "", "all", "new", "last", "last_per_subject":
	default:
		p.Addf("deliver_policy", "%q is not one of all, new, last, last_per_subject", j.DeliverPolicy)
	}
	if j.AckWait < 0 || (j.AckWait > 0 && j.AckWait < 100*time.Millisecond) || j.AckWait > conf.MaxDuration {
		p.Addf("ack_wait", "must be between 100ms and %v, got %v", conf.MaxDuration, j.AckWait)
	}
	p.Between("max_deliver", int64(j.MaxDeliver), -1, conf.MaxCount)
	for i, d := range j.Backoff {
		p.Durations(conf.MaxDuration, conf.NamedDuration{Name: fmt.Sprintf("backoff[%d]", i), V: d})
	}
	p.Between("max_ack_pending", int64(j.MaxAckPending), -1, conf.MaxCount)
	p.Durations(conf.MaxDuration, conf.NamedDuration{Name: "inactive_threshold", V: j.InactiveThreshold},
		conf.NamedDuration{Name: "slow_after", V: j.SlowAfter})
	if j.DeadLetter != "" {
		if err := subject.Validate(j.DeadLetter, false); err != nil {
			p.Addf("dead_letter", "%v", err)
		}
	}
	if j.CreateStream != nil {
		if j.Bind {
			p.Addf("create_stream", "a bound consumer's stream is not declared; drop bind or create_stream")
		}
		p.Merge("create_stream", j.CreateStream.Validate())
	}
	j.validateDeadLetterStream(p)
	p.Merge("jetstream", j.JetStreamAPI.Validate())
}

// validateDeadLetterStream checks the declaration of the dead-letter
// stream: named, valid, and storing DeadLetter.
func (j JetStream) validateDeadLetterStream(p conf.Problems) {
	if j.CreateDeadLetterStream == nil {
		return
	}
	if err := stream.ValidName(j.DeadLetterStream); err != nil {
		p.Addf("dead_letter_stream", "%v", err)
	}
	p.Merge("create_dead_letter_stream", j.CreateDeadLetterStream.Validate())
	if !j.CreateDeadLetterStream.Stores(j.DeadLetter) {
		p.Addf("create_dead_letter_stream", "does not store dead_letter %q", j.DeadLetter)
	}
}
