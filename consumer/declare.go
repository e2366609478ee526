package consumer

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/corral-go/corral/internal/jsapi"
)

// ensure declares the stream (if asked) and the consumer, or checks the
// bound consumer and takes its ack wait and max deliveries. created
// reports a consumer that did not exist.
func (r *jsRun) ensure(ctx context.Context, js jetstream.JetStream) (created bool, err error) {
	ctx, cancel := context.WithTimeout(ctx, jsapi.Timeout)
	defer cancel()
	c := r.j.cfg
	if c.CreateStream != nil {
		if _, err := c.CreateStream.Declare(ctx, js, c.Stream); err != nil {
			return false, err
		}
	}
	existing, infoErr := js.Consumer(ctx, c.Stream, c.Consumer)
	if c.Bind {
		if infoErr != nil {
			return false, fmt.Errorf("bind consumer %s of stream %s: %w", c.Consumer, c.Stream, infoErr)
		}
		cc := existing.CachedInfo().Config
		if cc.AckPolicy != jetstream.AckExplicitPolicy || cc.DeliverSubject != "" {
			return false, fmt.Errorf("bind consumer %s of stream %s: %w: a handler needs a pull consumer with explicit acks",
				c.Consumer, c.Stream, ErrInvalidConfig)
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
	if _, err := js.CreateOrUpdateConsumer(ctx, c.Stream, cfg); err != nil {
		var apiErr *jetstream.APIError
		if errors.As(err, &apiErr) && apiErr.ErrorCode == jetstream.JSErrCodeConsumerCreate ||
			errors.As(err, &apiErr) && strings.Contains(strings.ToLower(apiErr.Description), "can not be updated") {
			return false, fmt.Errorf("consumer %s of stream %s exists with settings that cannot be changed in place "+
				"(delete it, or bind to it as it is): %w", c.Consumer, c.Stream, err)
		}
		return false, fmt.Errorf("declare consumer %s of stream %s: %w", c.Consumer, c.Stream, err)
	}
	return errors.Is(infoErr, jetstream.ErrConsumerNotFound), nil
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
