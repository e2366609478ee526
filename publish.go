package corral

import (
	"context"
	"fmt"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/corral-go/corral/publisher"
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
// It waits for the connection until ctx ends. Data larger than the
// server's max payload fails, as Publish does, with an error wrapping
// publisher.ErrTooLarge that says both sizes; it also matches
// nats.ErrMaxPayload.
func (c *Client) PublishCore(ctx context.Context, subject string, data []byte) error {
	nc, err := c.Conn(ctx)
	if err != nil {
		return err
	}
	if limit := nc.MaxPayload(); int64(len(data)) > limit {
		return &tooLarge{size: len(data), limit: limit}
	}
	return nc.Publish(subject, data)
}

// tooLarge is publisher.ErrTooLarge for core data, with its sizes. It
// matches nats.ErrMaxPayload too: that is what PublishCore returned before
// it said the sizes.
type tooLarge struct {
	size  int
	limit int64
}

func (e *tooLarge) Error() string {
	return fmt.Sprintf("%v: %d bytes of data, the server accepts %d", publisher.ErrTooLarge, e.size, e.limit)
}

func (e *tooLarge) Unwrap() []error { return []error{publisher.ErrTooLarge, nats.ErrMaxPayload} }
