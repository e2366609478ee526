package consumer

import (
	"context"
	"errors"
	"fmt"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/corral-go/corral/internal/jsapi"
	"github.com/corral-go/corral/supervisor"
)

// ensure declares the streams (those asked for) and the consumer, or
// checks the bound consumer and takes its ack wait and max deliveries.
// created reports a consumer that did not exist.
func (r *jsRun) ensure(ctx context.Context, js jetstream.JetStream) (created bool, err error) {
	ctx, cancel := context.WithTimeout(ctx, jsapi.Timeout)
	defer cancel()
	c := r.j.cfg
	if err := c.declareStreams(ctx, js); err != nil {
		return false, err
	}
	// Asked until answered (jsapi.Ask): a cluster answers one of several
	// instances declaring a new consumer at once, and the others not at
	// all.
	existing, infoErr := jsapi.Ask(ctx, func(ctx context.Context) (jetstream.Consumer, error) {
		return js.Consumer(ctx, c.Stream, c.Consumer)
	})
	if errors.Is(infoErr, jetstream.ErrStreamNotFound) {
		return false, r.j.streamMissing(infoErr)
	}
	if c.Bind {
		if infoErr != nil {
			return false, fmt.Errorf("bind consumer %s of stream %s: %w", c.Consumer, c.Stream, infoErr)
		}
		cc := existing.CachedInfo().Config
		if cc.AckPolicy != jetstream.AckExplicitPolicy || cc.DeliverSubject != "" {
			return false, fmt.Errorf("bind consumer %s of stream %s: %w: a handler needs a pull consumer with explicit acks",
				c.Consumer, c.Stream, supervisor.ErrInvalidConfig)
		}
		r.setLimits(cc.AckWait, cc.MaxDeliver)
		return false, nil
	}
	cfg := c.consumerConfig()
	if r.deadLetterClient {
		// Enforced here, so that a message whose dead-letter copy failed
		// is delivered again to try once more.
		cfg.MaxDeliver = -1
	}
	declare := func(ctx context.Context) (jetstream.Consumer, error) {
		return js.CreateOrUpdateConsumer(ctx, c.Stream, cfg)
	}
	_, err = jsapi.Ask(ctx, declare)
	if code, _ := jsapi.Code(err); code == jsapi.CodeMaxAckPendingExcess && c.MaxAckPending == 0 {
		// The stream's, account's or server's limit is below the default:
		// the server's own default respects it.
		cfg.MaxAckPending = 0
		_, err = jsapi.Ask(ctx, declare)
	}
	if err != nil {
		if errors.Is(err, jetstream.ErrStreamNotFound) {
			return false, r.j.streamMissing(err)
		}
		if jsapi.UpdateRefused(err, infoErr == nil) {
			return false, fmt.Errorf("consumer %s of stream %s exists with settings that cannot be changed in place "+
				"(delete it, or bind to it as it is): %w", c.Consumer, c.Stream, err)
		}
		return false, fmt.Errorf("declare consumer %s of stream %s: %w", c.Consumer, c.Stream, err)
	}
	return errors.Is(infoErr, jetstream.ErrConsumerNotFound), nil
}

// declareStreams declares the streams c asks for: its own
// (CreateStream) and the one of its dead letters (CreateDeadLetterStream).
func (c Config) declareStreams(ctx context.Context, js jetstream.JetStream) error {
	if c.CreateStream != nil {
		if _, err := c.CreateStream.Declare(ctx, js, c.Stream); err != nil {
			return err
		}
	}
	if c.CreateDeadLetterStream != nil {
		if _, err := c.CreateDeadLetterStream.Declare(ctx, js, c.DeadLetterStream); err != nil {
			return fmt.Errorf("dead_letter %q: %w", c.DeadLetter, err)
		}
	}
	return nil
}

// checkDeadLetter makes sure a stream stores the dead-letter subject,
// unless ensure declared the one that does.
func (j *jsHandler) checkDeadLetter(ctx context.Context, js jetstream.JetStream) error {
	if j.cfg.CreateDeadLetterStream != nil {
		return nil
	}
	if err := jsapi.CheckDeadLetter(ctx, js, j.cfg.DeadLetter); err != nil {
		return fmt.Errorf("handler %q: %w", j.name, err)
	}
	return nil
}

// streamMissing is the error of a handler whose stream the server does
// not have, with the fix; it wraps err (jetstream.ErrStreamNotFound).
func (j *jsHandler) streamMissing(err error) error {
	fix := "declare it under the top-level streams: section of the configuration, or give the handler create_stream"
	if j.cfg.Bind {
		// A bound handler declares nothing: create_stream is refused.
		fix = "declare it under the top-level streams: section of the configuration, or create it and the consumer"
	}
	return fmt.Errorf("handler %q: stream %s does not exist on the server: %s: %w", j.name, j.cfg.Stream, fix, err)
}

// consumerConfig is the durable pull consumer c declares, with explicit
// acks.
func (c Config) consumerConfig() jetstream.ConsumerConfig {
	cc := jetstream.ConsumerConfig{
		Durable:           c.Consumer,
		AckPolicy:         jetstream.AckExplicitPolicy,
		AckWait:           c.AckWait,
		MaxDeliver:        c.MaxDeliver,
		MaxAckPending:     c.MaxAckPending,
		InactiveThreshold: c.InactiveThreshold,
	}
	if cc.MaxAckPending == 0 {
		cc.MaxAckPending = defaultMaxAckPending(c.Workers + c.QueueSize)
	}
	filters := c.FilterSubjects
	if c.Subject != "" {
		filters = append([]string{c.Subject}, filters...)
	}
	if len(filters) == 1 {
		cc.FilterSubject = filters[0]
	} else {
		cc.FilterSubjects = filters
	}
	switch c.DeliverPolicy {
	case "new":
		cc.DeliverPolicy = jetstream.DeliverNewPolicy
	case "last":
		cc.DeliverPolicy = jetstream.DeliverLastPolicy
	case "last_per_subject":
		cc.DeliverPolicy = jetstream.DeliverLastPerSubjectPolicy
	}
	return cc
}
