package corral

import (
	"context"

	"github.com/corral-go/corral/publisher"
	"github.com/nats-io/nats.go/jetstream"
)

// Publisher is the buffered publisher.
func (c *Client) Publisher() *publisher.Buffered { return c.pub }

// Publish accepts a message for a JetStream stream into the buffered
// publisher and returns once it is buffered, with the Future of its ack;
// see publisher.Buffered.Publish. It works before the connection is up:
// the message is sent when it is.
func (c *Client) Publish(ctx context.Context, subject string, data []byte, opts ...publisher.Option) (*publisher.Future, error) {
	return c.pub.Publish(ctx, subject, data, opts...)
}

// PublishSync publishes through the buffer and waits for the stream's ack.
func (c *Client) PublishSync(ctx context.Context, subject string, data []byte, opts ...publisher.Option) (*jetstream.PubAck, error) {
	return c.pub.PublishSync(ctx, subject, data, opts...)
}

// PublishCore publishes on core NATS: at most once, with no ack and no
// buffer of Corral's (only nats.go's reconnect buffer, while reconnecting).
// It waits for the connection until ctx ends.
func (c *Client) PublishCore(ctx context.Context, subject string, data []byte) error {
	nc, err := c.Conn(ctx)
	if err != nil {
		return err
	}
	return nc.Publish(subject, data)
}
